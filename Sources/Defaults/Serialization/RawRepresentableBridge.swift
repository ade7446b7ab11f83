import Foundation

extension Defaults {
	/// Stores a `RawRepresentable` value as the stored form of its raw value.
	///
	/// Types that are `RawRepresentable` but not `Codable` use it, and so do types that adopt
	/// ``Defaults/PreferRawRepresentable``; other `Codable` types are stored as JSON text.
	///
	/// ```swift
	/// enum Theme: String, Defaults.Serializable { case light, dark }
	/// // stored as "dark"
	/// ```
	public struct RawRepresentableBridge<Value: RawRepresentable>: Bridge, Sendable
	where Value.RawValue: Defaults.Serializable {
		/// The raw value, which is stored through its own bridge.
		public typealias Serializable = Value.RawValue

		/// Creates the bridge.
		public init() {}

		/// Returns the raw value of `value`.
		public func serialize(_ value: Value?) -> Value.RawValue? {
			value?.rawValue
		}

		/// Returns the value with raw value `object`, or `nil` if there is none.
		public func deserialize(_ object: Value.RawValue?) -> Value? {
			object.flatMap(Value.init(rawValue:))
		}
	}
}

extension Defaults.Serializable where Self: RawRepresentable, RawValue: Defaults.Serializable {
	/// ``Defaults/RawRepresentableBridge``: the raw value.
	public static var bridge: Defaults.RawRepresentableBridge<Self> { .init() }
}

extension Defaults.Serializable where Self: Codable & RawRepresentable, RawValue: Defaults.Serializable {
	/// ``Defaults/TopLevelCodableBridge``: JSON text of the value, such as `"\"alpha\""`.
	public static var bridge: Defaults.TopLevelCodableBridge<Self> { .init() }
}

extension Defaults.Serializable
where Self: Codable & RawRepresentable & Defaults.PreferRawRepresentable, RawValue: Defaults.Serializable {
	/// ``Defaults/RawRepresentableBridge``: the raw value, as ``Defaults/PreferRawRepresentable`` asks.
	public static var bridge: Defaults.RawRepresentableBridge<Self> { .init() }
}

// MARK: Why a stored value does not decode

extension Defaults.RawRepresentableBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		guard let raw = Value.RawValue.value(fromStoredForm: stored) else {
			return "the raw value: " + BridgeDiagnosis.reason(decoding: stored, as: Value.RawValue.self)
		}
		return "\(Value.self) has no value with the raw value \(raw)"
	}
}
