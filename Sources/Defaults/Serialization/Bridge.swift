import Foundation

extension Defaults {
	/// Turns values of one type into a form a store can hold, and back.
	///
	/// A bridge is pure: it never touches a store. Its ``Serializable`` is either a property-list type (`String`,
	/// `[String: Any]` …) or another ``Defaults/Serializable`` type, which is then stored through its own bridge.
	///
	/// ```swift
	/// struct User { var name: String; var age: Int }
	///
	/// struct UserBridge: Defaults.Bridge {
	/// 	typealias Value = User
	/// 	typealias Serializable = [String: String]
	///
	/// 	func serialize(_ value: User?) -> [String: String]? {
	/// 		value.map { ["name": $0.name, "age": String($0.age)] }
	/// 	}
	///
	/// 	func deserialize(_ object: [String: String]?) -> User? {
	/// 		guard let object, let name = object["name"], let age = object["age"].flatMap(Int.init) else {
	/// 			return nil
	/// 		}
	/// 		return User(name: name, age: age)
	/// 	}
	/// }
	///
	/// extension User: Defaults.Serializable {
	/// 	static let bridge = UserBridge()
	/// }
	/// ```
	///
	/// What a bridge writes is a contract: data written by one version of your app must read back in the next.
	/// `any Defaults.Bridge<User, [String: String]>` names a bridge by its two types (primary associated types).
	public protocol Bridge<Value, Serializable> {
		/// The type the bridge turns into a storable form.
		associatedtype Value
		/// The storable form: a property-list type, or another ``Defaults/Serializable`` type.
		associatedtype Serializable

		/// Returns the storable form of `value`, or `nil` when it has none.
		func serialize(_ value: Value?) -> Serializable?

		/// Returns the value that `object` stands for, or `nil` when `object` is not a valid form of it.
		func deserialize(_ object: Serializable?) -> Value?
	}

	/// A type that can be stored, through the ``Defaults/Bridge`` it names.
	///
	/// Most types need only the conformance: `Codable` types, `RawRepresentable` types and `NSSecureCoding`
	/// classes get their bridge from the package. Give any other type a bridge of its own:
	///
	/// ```swift
	/// extension User: Defaults.Serializable {
	/// 	static let bridge = UserBridge()
	/// }
	/// ```
	/// `some Defaults.Serializable<UserBridge>` names a serializable type by its bridge.
	///
	/// ## Which bridge a type gets
	///
	/// The first rule that applies wins:
	///
	/// 1. A key that names a bridge (`Key(_:default:bridge:)`, see ``Defaults/AnyBridge``) stores through it, whatever
	///    the type declares; one that names its elements' bridge (``Defaults/AnyBridge/array(of:alsoReading:)`` …)
	///    stores each element through that.
	/// 2. A type's own `static let bridge`, such as `UserBridge` above.
	/// 3. The package's own conformances: `Bool`, `String`, `Data`, `Date`, the integer and floating-point types,
	///    `URL` (JSON text), `UUID`, `Array`, `Set`, `Dictionary`, `Optional`, `Range` and `ClosedRange`.
	/// 4. Otherwise the most specific of the package's defaults, by what the type conforms to:
	///    - `Codable` and ``Defaults/PreferNSSecureCoding``: ``Defaults/NSSecureCodingBridge`` (a keyed archive);
	///    - `Codable`, `RawRepresentable` and ``Defaults/PreferRawRepresentable``:
	///      ``Defaults/RawRepresentableBridge`` (the raw value);
	///    - `Codable` (also when `RawRepresentable` or an `NSSecureCoding` class): ``Defaults/TopLevelCodableBridge``
	///      (JSON text, so `enum Letter: String, Codable` is stored as `"\"alpha\""`, as the well-known package does);
	///    - `RawRepresentable` with a serializable raw value, not `Codable` (option sets included):
	///      ``Defaults/RawRepresentableBridge``;
	///    - an `NSObject` that is `NSSecureCoding`, not `Codable`: ``Defaults/NSSecureCodingBridge``;
	///    - ``Defaults/CollectionSerializable``: ``Defaults/CollectionBridge``; ``Defaults/SetAlgebraSerializable``:
	///      ``Defaults/SetAlgebraBridge``.
	///
	/// A type for which two defaults apply equally (say an `NSSecureCoding` class that is `RawRepresentable` and not
	/// `Codable`) does not compile until it names its bridge. Since a later conformance (adding `Codable`) can change which
	/// default applies, and with it the stored form, pin the bridge on the key where data must stay readable.
	public protocol Serializable<Bridge> {
		/// The type the bridge produces when reading.
		typealias Value = Bridge.Value
		/// The storable form the bridge produces when writing.
		typealias Serializable = Bridge.Serializable
		/// The bridge that stores values of this type.
		associatedtype Bridge: Defaults.Bridge

		/// The bridge that stores values of this type.
		static var bridge: Bridge { get }

		/// Whether a store holds values of this type as they are, with no bridging.
		static var isNativelySupportedType: Bool { get }
	}

	/// A collection that can be stored as an array of its elements' stored forms.
	///
	/// ```swift
	/// struct Bag<Element: Defaults.Serializable>: Defaults.CollectionSerializable { … init(_ elements: [Element]) }
	/// ```
	public protocol CollectionSerializable<Element>: Collection, Serializable {
		/// Creates the collection from its elements, in stored order.
		init(_ elements: [Element])
	}

	/// A set-algebra type that can be stored as an array of its elements' stored forms.
	///
	/// Option sets are the common case; they can also be stored as their raw value (see
	/// ``Defaults/RawRepresentableBridge``).
	public protocol SetAlgebraSerializable<Element>: SetAlgebra, Serializable {
		/// The elements, in the order they are stored.
		func toArray() -> [Element]
	}

	/// Marks a `Codable` and `RawRepresentable` type to be stored as its raw value rather than as JSON text.
	///
	/// ```swift
	/// enum Theme: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable { case light, dark }
	/// // stored as "dark", not "\"dark\""
	/// ```
	public protocol PreferRawRepresentable: RawRepresentable {}

	/// Marks a `Codable` and `NSSecureCoding` class to be stored as a keyed archive rather than as JSON text.
	public protocol PreferNSSecureCoding: NSObject, NSSecureCoding {}
}

extension Defaults.Serializable {
	/// Whether a store holds values of this type as they are: the property-list types (`Bool`, `String`, `Data`,
	/// `Date`, the integer and floating-point types), and arrays, optionals and string-keyed dictionaries of them.
	/// A type with a bridge of its own is bridged unless it says otherwise.
	public static var isNativelySupportedType: Bool {
		(Self.self as? any StoredAsItIs.Type)?.isStoredAsItIs ?? false
	}
}

/// A type of the package's own conformances that a store may hold as it is: the answer to `isNativelySupportedType`,
/// said once for each type here rather than by a public declaration on each.
protocol StoredAsItIs {
	static var isStoredAsItIs: Bool { get }
}

extension StoredAsItIs {
	static var isStoredAsItIs: Bool { true }
}
