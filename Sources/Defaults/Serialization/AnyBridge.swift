import Foundation

extension Defaults {
	/// A bridge for one key's values, chosen by the key rather than by the type.
	///
	/// A key normally stores its values the way their type picks (``Defaults/Serializable/bridge``). Naming the
	/// bridge on the key instead pins the stored form, so that a conformance added to the type later (say `Codable`)
	/// can never change what an existing key stores:
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let mime = Key<Mime>("mime", default: .json, bridge: .rawValue)
	/// 	static let window = Key<Window>("window", default: .init(), bridge: .json, alsoReading: [.jsonData])
	/// 	static let user = Key<User>("user", default: .guest, bridge: .init(UserBridge()))
	/// }
	/// ```
	///
	/// The built-in forms are ``automatic`` (the type's own bridge), ``rawValue``, ``json`` (JSON text, the
	/// well-known Defaults package's form), ``jsonData`` (JSON as `Data`, the form of several other settings
	/// libraries) and ``keyedArchive``; any ``Defaults/Bridge`` can be wrapped with ``init(_:)``.
	public struct AnyBridge<Value>: Bridge, @unchecked Sendable {
		/// A short name for messages, such as `JSON text` or `RawRepresentableBridge<Mime>`.
		package let name: String
		private let encode: (Value) throws(SerializationError) -> Any?
		private let read: (Any) -> Reading

		/// What decoding a stored value gave, with the name of the older form a part of it was read in: an element
		/// that a collection bridge (``array(of:alsoReading:)`` …) read through one of its elements' older forms.
		/// `nil` when every part was in the current form.
		typealias Reading = (result: DecodeResult<Value>, olderForm: String?)

		init(
			name: String, encode: @escaping (Value) throws(SerializationError) -> Any?,
			decode: @escaping (Any) -> DecodeResult<Value>
		) {
			self.init(name: name, encode: encode, read: { (decode($0), nil) })
		}

		init(
			name: String, encode: @escaping (Value) throws(SerializationError) -> Any?,
			read: @escaping (Any) -> Reading
		) {
			self.name = name
			self.encode = encode
			self.read = read
		}

		/// Wraps any bridge for `Value`; its stored form is normalised like every other.
		public init<Wrapped: Bridge>(_ bridge: Wrapped) where Wrapped.Value == Value {
			self.init(bridge, name: "\(Wrapped.self)")
		}

		init<Wrapped: Bridge>(_ bridge: Wrapped, name: String) where Wrapped.Value == Value {
			self.init(
				name: name,
				encode: { value throws(SerializationError) in
					try StoredForm.encode(value, with: bridge, type: Value.self)
				},
				decode: { stored in StoredForm.decoded(stored, through: bridge) })
		}

		/// The stored form of `value`: a normalised property-list value, or `nil` to remove the key.
		func storedForm(of value: Value) throws(SerializationError) -> Any? {
			try encode(value)
		}

		/// The value that `stored` stands for, or why it is not one.
		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			read(stored).result
		}

		/// The value that `stored` stands for, or why it is not one, and the older form a part of it was read in.
		func reading(storedForm stored: Any) -> Reading {
			read(stored)
		}

		/// The value that `stored` stands for, or `nil`.
		func value(fromStoredForm stored: Any) -> Value? {
			read(stored).result.value
		}

		/// Returns the stored form of `value`, or `nil` when it has none.
		public func serialize(_ value: Value?) -> Any? {
			value.flatMap { try? encode($0) }
		}

		/// Returns the value that the stored form `object` stands for.
		public func deserialize(_ object: Any?) -> Value? {
			object.flatMap { read($0).result.value }
		}
	}
}

extension Defaults.AnyBridge where Value: Defaults.Serializable {
	/// The bridge the type picks for itself (``Defaults/Serializable/bridge``): what a key uses when it names none.
	public static var automatic: Self {
		Self(
			// The package's scalars name their bridge through this type: the name is the wrapped bridge's.
			name: (Value.bridge as? Self)?.name ?? "\(Value.Bridge.self)",
			encode: { value throws(Defaults.SerializationError) in try Value.storedForm(of: value) },
			decode: { Value.decoded(fromStoredForm: $0) })
	}
}

extension Defaults.AnyBridge where Value: RawRepresentable, Value.RawValue: Defaults.Serializable {
	/// The raw value, in its own stored form: `"dark"` for `Theme.dark`, `3` for an option set.
	public static var rawValue: Self { Self(Defaults.RawRepresentableBridge<Value>()) }
}

extension Defaults.AnyBridge where Value: Codable {
	/// JSON text in a string, with sorted keys: the form the well-known Defaults package writes for `Codable`.
	public static var json: Self { Self(Defaults.TopLevelCodableBridge<Value>(), name: "JSON text") }

	/// JSON as `Data`: the form several other Swift settings libraries write for `Codable` values.
	public static var jsonData: Self { Self(JSONDataBridge<Value>(), name: "JSON data") }
}

extension Defaults.AnyBridge where Value: NSObject & NSSecureCoding {
	/// A keyed archive (`Data`), secure coding required: the form `NSSecureCoding` objects have always been stored in.
	public static var keyedArchive: Self { Self(Defaults.NSSecureCodingBridge<Value>()) }
}

extension Defaults.AnyBridge where Value == UUID {
	/// The `uuidString`: the bridge `UUID` picks for itself, so ``automatic`` names the same form.
	package static var uuidString: Self { Self(Defaults.UUIDBridge()) }
}

// MARK: Decoding once, with the reason a stored value does not decode

extension Defaults.AnyBridge: DecodingBridge {}
