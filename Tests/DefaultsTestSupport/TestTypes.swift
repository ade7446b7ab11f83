import Defaults
import Foundation

// One type for each way a type can pick its bridge, shared by the tests and their child processes.

/// A Codable struct: stored as JSON text.
public struct Window: Codable, Hashable, Sendable, Defaults.Serializable {
	public var width: Int
	public var height: Int
	public var title: String

	public init(width: Int, height: Int, title: String) {
		self.width = width
		self.height = height
		self.title = title
	}
}

/// A Codable class: stored as JSON text.
public final class Profile: Codable, Equatable, Defaults.Serializable {
	public let name: String
	public let tags: [String]

	public init(name: String, tags: [String]) {
		self.name = name
		self.tags = tags
	}

	public static func == (lhs: Profile, rhs: Profile) -> Bool {
		lhs.name == rhs.name && lhs.tags == rhs.tags
	}
}

/// A Codable enum with associated values: stored as JSON text.
public enum Shape: Codable, Hashable, Defaults.Serializable {
	case circle(radius: Double)
	case square
}

/// Codable and RawRepresentable (String): stored as JSON text of the raw value, `"\"alpha\""`.
public enum Letter: String, Codable, Defaults.Serializable {
	case alpha, beta
}

/// Codable and RawRepresentable (Int): stored as JSON text, `"10"`.
public enum Size: Int, Codable, Defaults.Serializable {
	case small = 10, large = 20
}

/// RawRepresentable, not Codable: stored as the raw value.
public enum Theme: String, Defaults.Serializable {
	case light, dark
}

/// Codable and RawRepresentable, preferring the raw value: stored as the raw value.
public enum Mime: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable {
	case json = "application/json"
	case text = "text/plain"
}

/// An option set: stored as its raw value.
public struct Permissions: OptionSet, Hashable, Sendable, Defaults.Serializable {
	public let rawValue: Int

	public init(rawValue: Int) {
		self.rawValue = rawValue
	}

	public static let read = Permissions(rawValue: 1)
	public static let write = Permissions(rawValue: 2)
}

/// NSSecureCoding only: stored as a keyed archive.
public final class Bookmark: NSObject, NSSecureCoding, Defaults.Serializable {
	public static let supportsSecureCoding = true
	public let path: String

	public init(path: String) {
		self.path = path
	}

	public init?(coder: NSCoder) {
		guard let path = coder.decodeObject(of: NSString.self, forKey: "path") as String? else {
			return nil
		}
		self.path = path
	}

	public func encode(with coder: NSCoder) {
		coder.encode(path as NSString, forKey: "path")
	}

	override public func isEqual(_ object: Any?) -> Bool {
		(object as? Bookmark)?.path == path
	}

	override public var hash: Int { path.hashValue }
}

/// Codable and NSSecureCoding: stored as JSON text.
public final class Tag: NSObject, NSSecureCoding, Codable, Defaults.Serializable {
	public static let supportsSecureCoding = true
	public let name: String

	public init(name: String) {
		self.name = name
	}

	public init?(coder: NSCoder) {
		guard let name = coder.decodeObject(of: NSString.self, forKey: "name") as String? else {
			return nil
		}
		self.name = name
	}

	public func encode(with coder: NSCoder) {
		coder.encode(name as NSString, forKey: "name")
	}

	override public func isEqual(_ object: Any?) -> Bool {
		(object as? Tag)?.name == name
	}

	override public var hash: Int { name.hashValue }
}

/// Codable and NSSecureCoding, preferring the archive: stored as a keyed archive.
public final class ArchivedTag: NSObject, NSSecureCoding, Codable, Defaults.Serializable,
	Defaults.PreferNSSecureCoding
{
	public static let supportsSecureCoding = true
	public let name: String

	public init(name: String) {
		self.name = name
	}

	public init?(coder: NSCoder) {
		guard let name = coder.decodeObject(of: NSString.self, forKey: "name") as String? else {
			return nil
		}
		self.name = name
	}

	public func encode(with coder: NSCoder) {
		coder.encode(name as NSString, forKey: "name")
	}

	override public func isEqual(_ object: Any?) -> Bool {
		(object as? ArchivedTag)?.name == name
	}

	override public var hash: Int { name.hashValue }
}

/// A domain type with a bridge of its own: stored as `["name": …, "age": …]`.
public struct User: Hashable, Sendable, Defaults.Serializable {
	public var name: String
	public var age: Int

	public init(name: String, age: Int) {
		self.name = name
		self.age = age
	}

	public static let bridge = UserBridge()
}

/// Stores a ``User`` as a dictionary of strings.
public struct UserBridge: Defaults.Bridge, Sendable {
	public typealias Value = User
	public typealias Serializable = [String: String]

	public func serialize(_ value: User?) -> [String: String]? {
		value.map { ["name": $0.name, "age": String($0.age)] }
	}

	public func deserialize(_ object: [String: String]?) -> User? {
		guard let object, let name = object["name"], let age = object["age"].flatMap(Int.init) else {
			return nil
		}
		return User(name: name, age: age)
	}
}

/// A set-algebra type of its own: stored as an array.
public struct Flags<Element: Hashable & Defaults.Serializable>: SetAlgebra, Defaults.SetAlgebraSerializable {
	private var storage: Set<Element> = []

	public init() {}

	public init(_ elements: [Element]) {
		storage = Set(elements)
	}

	public func toArray() -> [Element] { Array(storage) }
	public func contains(_ member: Element) -> Bool { storage.contains(member) }
	public func union(_ other: Flags) -> Flags { Flags(Array(storage.union(other.storage))) }
	public func intersection(_ other: Flags) -> Flags { Flags(Array(storage.intersection(other.storage))) }
	public func symmetricDifference(_ other: Flags) -> Flags {
		Flags(Array(storage.symmetricDifference(other.storage)))
	}
	public mutating func insert(_ newMember: Element) -> (inserted: Bool, memberAfterInsert: Element) {
		storage.insert(newMember)
	}
	public mutating func remove(_ member: Element) -> Element? { storage.remove(member) }
	public mutating func update(with newMember: Element) -> Element? { storage.update(with: newMember) }
	public mutating func formUnion(_ other: Flags) { storage.formUnion(other.storage) }
	public mutating func formIntersection(_ other: Flags) { storage.formIntersection(other.storage) }
	public mutating func formSymmetricDifference(_ other: Flags) { storage.formSymmetricDifference(other.storage) }
}

/// A collection of its own: stored as an array.
public struct Bag<Element: Defaults.Serializable>: Collection, Defaults.CollectionSerializable {
	private var items: [Element]

	public init(_ elements: [Element]) {
		items = elements
	}

	public var startIndex: Int { items.startIndex }
	public var endIndex: Int { items.endIndex }
	public subscript(position: Int) -> Element { items[position] }
	public func index(after index: Int) -> Int { items.index(after: index) }
}

extension Bag: Equatable where Element: Equatable {}

/// An amount of money whose own bridge stores it as text, `"1234 EUR"` (``MoneyTextBridge``); keys that pin
/// ``MoneyBridgeV2`` store it as a dictionary instead, and read the text as an older form.
public struct Money: Hashable, Sendable, Defaults.Serializable {
	public var cents: Int
	public var currency: String

	public init(cents: Int, currency: String) {
		self.cents = cents
		self.currency = currency
	}

	public static let bridge = MoneyTextBridge()
}

/// Stores ``Money`` as `"<cents> <currency>"`: the form of an app's first version.
public struct MoneyTextBridge: Defaults.Bridge, Sendable {
	public func serialize(_ value: Money?) -> String? {
		value.map { "\($0.cents) \($0.currency)" }
	}

	public func deserialize(_ object: String?) -> Money? {
		guard let parts = object?.split(separator: " "), parts.count == 2, let cents = Int(parts[0]) else {
			return nil
		}
		return Money(cents: cents, currency: String(parts[1]))
	}
}

/// Stores ``Money`` as `["cents": 1234, "currency": "EUR"]`: the form a later version pins on its keys.
public struct MoneyBridgeV2: Defaults.Bridge, Sendable {
	public init() {}

	public func serialize(_ value: Money?) -> [String: Any]? {
		value.map { ["cents": $0.cents, "currency": $0.currency] }
	}

	public func deserialize(_ object: [String: Any]?) -> Money? {
		guard let cents = object?["cents"] as? Int, let currency = object?["currency"] as? String else {
			return nil
		}
		return Money(cents: cents, currency: currency)
	}
}
