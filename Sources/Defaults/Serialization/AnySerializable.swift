import Foundation

extension Defaults {
	/// A type-erased serializable value, for settings that mix types in one collection.
	///
	/// It holds the stored form of the value it was made from, so a `[String: Defaults.AnySerializable]` is stored as
	/// a plain property-list dictionary that any other tool can read.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let magic = Key<[String: Defaults.AnySerializable]>("magic", default: [:])
	/// }
	///
	/// Defaults[.magic]["unicorn"] = "🦄"
	/// Defaults[.magic]["number"] = 3
	/// Defaults[.magic]["url"] = .init(URL(string: "https://example.com")!)
	///
	/// let number: Int? = Defaults[.magic]["number"]?.get()
	/// let url = Defaults[.magic]["url"]?.get(URL.self)
	/// ```
	///
	/// Two values are equal when their stored forms are equal.
	public struct AnySerializable: Serializable, Equatable, Hashable, @unchecked Sendable {
		// A normalised property-list value (immutable, so sharing it is safe), or nil.
		private var storedForm: Any?

		/// The bridge: the wrapped stored form, as it is.
		public static let bridge = AnyBridge(AnySerializableBridge())

		/// Wraps `value`, keeping its stored form.
		///
		/// A value that has no stored form (its bridge returns `nil`) wraps as `nil`, and the failure is reported.
		public init<Value: Serializable>(_ value: Value) {
			do {
				self.storedForm = try Value.storedForm(of: value)
			} catch {
				Defaults.report(Defaults.Failure(keyName: "", reason: .encodingFailed, message: error.description))
				self.storedForm = nil
			}
		}

		/// Wraps a value that is already a normalised property-list value.
		init(storedForm: Any?) {
			self.storedForm = storedForm
		}

		/// The wrapped value as a `Value`, or `nil` if it is not one.
		///
		/// ```swift
		/// let level: Int? = settings["level"]?.get()
		/// ```
		public func get<Value: Serializable>() -> Value? {
			storedForm.flatMap(Value.value(fromStoredForm:))
		}

		/// The wrapped value as a `Value`, or `nil` if it is not one.
		///
		/// ```swift
		/// let level = settings["level"]?.get(Int.self)
		/// ```
		public func get<Value: Serializable>(_: Value.Type) -> Value? {
			get()
		}

		/// Replaces the wrapped value with `newValue`.
		public mutating func set<Value: Serializable>(_ newValue: Value) {
			self = AnySerializable(newValue)
		}

		/// Replaces the wrapped value with `newValue`, stored as a `type`: for a literal whose type would otherwise be
		/// inferred, as in the well-known Defaults package.
		///
		/// ```swift
		/// settings["opacity"]?.set(0.5, type: Float.self)
		/// ```
		public mutating func set<Value: Serializable>(_ newValue: Value, type: Value.Type) {
			set(newValue)
		}

		/// The wrapped stored form: a normalised property-list value, or `nil`.
		public var propertyListValue: Any? { storedForm }

		/// Whether both hold equal stored forms.
		public static func == (lhs: AnySerializable, rhs: AnySerializable) -> Bool {
			Defaults.PropertyList.isEqualOrBothAbsent(lhs.storedForm, rhs.storedForm)
		}

		/// Hashes the stored form.
		public func hash(into hasher: inout Hasher) {
			if let storedForm {
				Defaults.PropertyList.hash(storedForm, into: &hasher)
			} else {
				hasher.combine(-1)
			}
		}
	}

	/// Stores a ``Defaults/AnySerializable`` as the stored form it wraps.
	struct AnySerializableBridge: Bridge, Sendable {
		/// Returns the wrapped stored form.
		func serialize(_ value: AnySerializable?) -> Any? {
			value?.propertyListValue
		}

		/// Wraps `object`.
		func deserialize(_ object: Any?) -> AnySerializable? {
			object.map { AnySerializable(storedForm: $0) }
		}
	}
}

extension Defaults.AnySerializable: ExpressibleByStringLiteral {
	/// Wraps a string.
	public init(stringLiteral value: String) { self.init(value) }
}

extension Defaults.AnySerializable: ExpressibleByIntegerLiteral {
	/// Wraps an `Int`.
	public init(integerLiteral value: Int) { self.init(value) }
}

extension Defaults.AnySerializable: ExpressibleByFloatLiteral {
	/// Wraps a `Double`.
	public init(floatLiteral value: Double) { self.init(value) }
}

extension Defaults.AnySerializable: ExpressibleByBooleanLiteral {
	/// Wraps a `Bool`.
	public init(booleanLiteral value: Bool) { self.init(value) }
}

extension Defaults.AnySerializable: ExpressibleByNilLiteral {
	/// Wraps nothing. In a dictionary, a `nil` value is not stored; in an array it cannot be stored.
	public init(nilLiteral: ()) { self.init(storedForm: nil) }
}

extension Defaults.AnySerializable: ExpressibleByArrayLiteral {
	/// Wraps an array of type-erased values.
	public init(arrayLiteral elements: Defaults.AnySerializable...) { self.init(elements) }
}

extension Defaults.AnySerializable: ExpressibleByDictionaryLiteral {
	/// Wraps a dictionary of type-erased values.
	public init(dictionaryLiteral elements: (String, Defaults.AnySerializable)...) {
		self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
	}
}

extension Defaults.AnySerializable: CustomStringConvertible, CustomDebugStringConvertible {
	/// The wrapped value as `print` shows it: `🦄` for a string, `3` for a number, `nil` when it wraps nothing.
	public var description: String {
		propertyListValue.map { String(describing: $0) } ?? "nil"
	}

	/// The wrapped value as `debugPrint` shows it, so that a collection of them prints as its values do:
	/// `["unicorn": "🦄", "number": 3]`.
	public var debugDescription: String {
		propertyListValue.map { String(reflecting: $0) } ?? "nil"
	}
}
