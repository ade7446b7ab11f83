import Foundation

extension Defaults {
	/// Stores an `Optional` as its wrapped value's stored form; `nil` removes the key.
	public struct OptionalBridge<Wrapped: Serializable>: Bridge, Sendable {
		/// Returns the wrapped value's stored form, or `nil`.
		public func serialize(_ value: Wrapped?) -> Any? {
			value.flatMap { try? Wrapped.storedForm(of: $0) }
		}

		/// Returns the wrapped value that `object` stands for.
		public func deserialize(_ object: Any?) -> Wrapped? {
			object.flatMap(Wrapped.value(fromStoredForm:))
		}

		func decode(storedForm stored: Any) -> DecodeResult<Wrapped> {
			Wrapped.decoded(fromStoredForm: stored)
		}
	}
}

/// An optional is stored as its wrapped value's stored form; `nil` removes the key.
extension Optional: Defaults.Serializable where Wrapped: Defaults.Serializable {
	/// ``Defaults/OptionalBridge``.
	public static var bridge: Defaults.OptionalBridge<Wrapped> { .init() }
}

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.OptionalBridge: DecodingBridge {}

extension Optional: StoredAsItIs where Wrapped: Defaults.Serializable {
	static var isStoredAsItIs: Bool { Wrapped.isNativelySupportedType }
}
