import Foundation

extension Defaults {
	/// Why a value could not be turned into its stored form. Package access: a user meets it only as a sentence,
	/// in a ``Defaults/Failure`` (``Defaults/Failure/Reason/encodingFailed``), an ``Defaults/UpdateError`` or a
	/// ``Defaults/MigrationError``, which carry it.
	package struct SerializationError: Error, Sendable, CustomStringConvertible {
		/// The type whose value could not be stored.
		package let typeName: String
		/// What went wrong.
		package let reason: String

		/// A sentence naming the type and the reason.
		package var description: String { "A \(typeName) value could not be stored: \(reason)" }
	}
}

extension Defaults.Serializable {
	/// The normalised property-list value that `value` is stored as, or `nil` for an optional that is `nil`.
	///
	/// - Throws: ``Defaults/SerializationError`` when the bridge gives no form, or a form that is not a property
	///   list.
	static func storedForm(of value: Self) throws(Defaults.SerializationError) -> Any? {
		// Only an optional (of anything, an `AnySerializable` among them: a cast looks through optionals) or an
		// `AnySerializable` can stand for nothing. The type is asked first: a cast of the value copies it into an
		// existential box (retaining what it holds) on every write of every other type, to fail.
		if Self.self is any OptionalProtocol.Type || Self.self == Defaults.AnySerializable.self {
			if let optional = value as? any OptionalProtocol, optional.wrappedAny == nil {
				return nil
			}
			if let erased = value as? Defaults.AnySerializable, erased.propertyListValue == nil {
				return nil
			}
		}
		// The normalised scalars are natively supported, and asking that costs a conformance lookup per element.
		if StoredForm.isNormalizedScalarType(Self.self) {
			return value
		}
		return try StoredForm.encode(value as? Bridge.Value, with: bridge, type: Self.self)
	}

	/// The value that the normalised property-list value `stored` stands for, or `nil` if it does not decode.
	static func value(fromStoredForm stored: Any) -> Self? {
		decoded(fromStoredForm: stored).value
	}

	/// The value that the normalised property-list value `stored` stands for, or why it is not one.
	static func decoded(fromStoredForm stored: Any) -> DecodeResult<Self> {
		if isNativelySupportedType, let value = stored as? Self {
			return .value(value)
		}
		// A bridge that stores the type as it is: a cast is the whole decoding, and recursing would not end.
		let castingStoredForm = Bridge.Serializable.self == Self.self
		switch StoredForm.decoded(stored, through: bridge, castingStoredForm: castingStoredForm) {
		case .value(let value):
			if let value = value as? Self {
				return .value(value)
			}
			return .failure("\(Bridge.self) did not accept \(BridgeDiagnosis.describe(stored))")
		case .failure(let reason):
			return .failure(reason)
		}
	}
}

/// Decoding of normalised property-list values into bridges' `Serializable` types.
enum StoredForm {
	/// What `bridge` serialises `value` to, normalised: the one way every bridge's output reaches a store. `type` is
	/// the type named in the error; its name is only made for an error, not on every write.
	static func encode<Wrapped: Defaults.Bridge>(
		_ value: Wrapped.Value?, with bridge: Wrapped, type: Any.Type
	) throws(Defaults.SerializationError) -> Any {
		guard let serialized = bridge.serialize(value) else {
			throw Defaults.SerializationError(
				typeName: "\(type)", reason: BridgeDiagnosis.reason(encoding: value, through: bridge))
		}
		// Text (JSON text, the form of every Codable value, among others) is its own normalised form: the
		// normaliser would only cast it to the types it tries before `String` to give it back unchanged.
		if let text = serialized as? String {
			return text
		}
		do throws(Defaults.PropertyList.Error) {
			return try Defaults.PropertyList.normalize(serialized)
		} catch {
			throw Defaults.SerializationError(typeName: "\(type)", reason: error.description)
		}
	}

	/// What `bridge` decodes `stored` to: a built-in bridge's own decoding with its own reason, else the bridge's
	/// `deserialize` of `stored` as its `Serializable` (by a cast when `castingStoredForm`), with a generic reason.
	static func decoded<Wrapped: Defaults.Bridge>(
		_ stored: Any, through bridge: Wrapped, castingStoredForm: Bool = false
	) -> DecodeResult<Wrapped.Value> {
		if let decoding = bridge as? any DecodingBridge<Wrapped.Value> {
			return decoding.decode(storedForm: stored)
		}
		let serializable =
			castingStoredForm ? stored as? Wrapped.Serializable : decode(stored, as: Wrapped.Serializable.self)
		guard let serializable else {
			return .failure(
				"\(Wrapped.self) expects a \(Wrapped.Serializable.self), and found \(BridgeDiagnosis.describe(stored))")
		}
		guard let value = bridge.deserialize(serializable) else {
			return .failure("\(Wrapped.self) did not accept \(BridgeDiagnosis.describe(stored))")
		}
		return .value(value)
	}

	/// `stored` as a `T`: through `T`'s own bridge when `T` is ``Defaults/Serializable``, else by a cast.
	static func decode<T>(_ stored: Any, as type: T.Type) -> T? {
		if let serializable = type as? any Defaults.Serializable.Type {
			return decode(stored, through: serializable) as? T
		}
		return stored as? T
	}

	private static func decode<S: Defaults.Serializable>(_ stored: Any, through type: S.Type) -> S? {
		S.value(fromStoredForm: stored)
	}

	/// The wrapped type of an optional type, else `type` itself.
	static func unwrappingOptional(_ type: Any.Type) -> Any.Type {
		(type as? any OptionalProtocol.Type)?.wrappedType ?? type
	}

	/// Whether values of `type` are already in the normalised shape, so that they can be stored as they are.
	static func isNormalizedScalarType(_ type: Any.Type) -> Bool {
		type == Int.self || type == String.self || type == Bool.self || type == Double.self || type == Data.self
			|| type == Date.self
	}
}
