import Foundation

extension Defaults {
	/// Stores a `Codable` value as JSON text in a property-list string.
	///
	/// The JSON is written with sorted keys and Foundation's default strategies, and top-level fragments are
	/// allowed, so an enum case `alpha` is stored as `"\"alpha\""` and the number 10 as `"10"`. This is the form the
	/// well-known Defaults package writes, so data stored by it reads back here.
	///
	/// ```swift
	/// struct Window: Codable, Defaults.Serializable { var width: Int; var height: Int }
	/// // stored as "{\"height\":600,\"width\":800}"
	/// ```
	public struct TopLevelCodableBridge<Value: Codable>: Bridge, Sendable {}
}

extension Defaults {
	/// A bridge that stores a `Codable` value as JSON text, for a custom bridge that only needs to name its type.
	///
	/// ```swift
	/// struct SettingsBridge: Defaults.CodableBridge {
	/// 	typealias Value = Settings
	/// }
	/// ```
	///
	/// ``Defaults/TopLevelCodableBridge``, the bridge every `Codable` type gets, is one of these.
	public protocol CodableBridge: Bridge where Serializable == String, Value: Codable {}
}

extension Defaults.CodableBridge {
	/// Returns the JSON text of `value`, or `nil` if encoding fails.
	public func serialize(_ value: Value?) -> String? {
		value.flatMap { try? JSONText.encode($0) }
	}

	/// Returns the value decoded from the JSON text `object`, or `nil` if it does not decode.
	public func deserialize(_ object: String?) -> Value? {
		object.flatMap { decode(storedForm: $0).value }
	}

	func decode(storedForm stored: Any) -> DecodeResult<Value> {
		guard let text = stored as? String else {
			return .failure("JSON text is stored as a String, and found \(BridgeDiagnosis.describe(stored))")
		}
		return BridgeDiagnosis.decodeJSON(Data(text.utf8), as: Value.self)
	}
}

extension Defaults.TopLevelCodableBridge: Defaults.CodableBridge {}

/// Stores a `Codable` value as JSON `Data`: the form other settings libraries write, read through
/// ``Defaults/AnyBridge/jsonData``.
struct JSONDataBridge<Value: Codable>: Defaults.Bridge {
	func serialize(_ value: Value?) -> Data? {
		value.flatMap { try? JSONText.encode($0) }.map { Data($0.utf8) }
	}

	func deserialize(_ object: Data?) -> Value? {
		object.flatMap { decode(storedForm: $0).value }
	}

	func decode(storedForm stored: Any) -> DecodeResult<Value> {
		guard let data = stored as? Data else {
			return .failure("JSON data is stored as Data, and found \(BridgeDiagnosis.describe(stored))")
		}
		return BridgeDiagnosis.decodeJSON(data, as: Value.self)
	}
}

/// The one JSON configuration every Codable stored form uses.
enum JSONText {
	static func encode<Value: Encodable>(_ value: Value) throws -> String {
		let encoder = JSONEncoder()
		encoder.outputFormatting = .sortedKeys
		return String(decoding: try encoder.encode(value), as: UTF8.self)
	}
}

extension Defaults.Serializable where Self: Codable {
	/// ``Defaults/TopLevelCodableBridge``: JSON text.
	public static var bridge: Defaults.TopLevelCodableBridge<Self> { .init() }
}

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.TopLevelCodableBridge: DecodingBridge {}
extension JSONDataBridge: DecodingBridge {}
