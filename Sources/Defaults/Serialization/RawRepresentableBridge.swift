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
		/// Returns the raw value of `value`.
		public func serialize(_ value: Value?) -> Value.RawValue? {
			value?.rawValue
		}

		/// Returns the value with raw value `object`, or `nil` if there is none.
		public func deserialize(_ object: Value.RawValue?) -> Value? {
			object.flatMap(Value.init(rawValue:))
		}

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			switch Value.RawValue.decoded(fromStoredForm: stored) {
			case .failure(let reason):
				return .failure("the raw value: " + reason)
			case .value(let raw):
				guard let value = deserialize(raw) else {
					return .failure("\(Value.self) has no value with the raw value \(raw)")
				}
				return .value(value)
			}
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

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.RawRepresentableBridge: DecodingBridge {}
