import Defaults
import Foundation

// Types that pick each built-in bridge, shared by the tests.

struct Window: Codable, Hashable, Defaults.Serializable {
	var width: Int
	var height: Int
	var title: String
}

enum Letter: String, Codable, Defaults.Serializable {
	case alpha, beta
}

enum Size: Int, Codable, Defaults.Serializable {
	case small = 10, large = 20
}

enum Theme: String, Defaults.Serializable {
	case light, dark
}

enum Mime: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable {
	case json = "application/json"
	case text = "text/plain"
}

enum Shape: Codable, Hashable, Defaults.Serializable {
	case circle(radius: Double)
	case square
}

final class Bookmark: NSObject, NSSecureCoding, Defaults.Serializable {
	static let supportsSecureCoding = true
	let path: String

	init(path: String) {
		self.path = path
	}

	init?(coder: NSCoder) {
		guard let path = coder.decodeObject(of: NSString.self, forKey: "path") as String? else {
			return nil
		}
		self.path = path
	}

	func encode(with coder: NSCoder) {
		coder.encode(path as NSString, forKey: "path")
	}

	override func isEqual(_ object: Any?) -> Bool {
		(object as? Bookmark)?.path == path
	}

	override var hash: Int { path.hashValue }
}

final class Tag: NSObject, NSSecureCoding, Codable, Defaults.Serializable {
	static let supportsSecureCoding = true
	let name: String

	init(name: String) {
		self.name = name
	}

	init?(coder: NSCoder) {
		guard let name = coder.decodeObject(of: NSString.self, forKey: "name") as String? else {
			return nil
		}
		self.name = name
	}

	func encode(with coder: NSCoder) {
		coder.encode(name as NSString, forKey: "name")
	}

	override func isEqual(_ object: Any?) -> Bool {
		(object as? Tag)?.name == name
	}

	override var hash: Int { name.hashValue }
}

final class ArchivedTag: NSObject, NSSecureCoding, Codable, Defaults.Serializable, Defaults.PreferNSSecureCoding {
	static let supportsSecureCoding = true
	let name: String

	init(name: String) {
		self.name = name
	}

	init?(coder: NSCoder) {
		guard let name = coder.decodeObject(of: NSString.self, forKey: "name") as String? else {
			return nil
		}
		self.name = name
	}

	func encode(with coder: NSCoder) {
		coder.encode(name as NSString, forKey: "name")
	}

	override func isEqual(_ object: Any?) -> Bool {
		(object as? ArchivedTag)?.name == name
	}

	override var hash: Int { name.hashValue }
}

/// An option set is stored as its raw value.
struct Permissions: OptionSet, Hashable, Defaults.Serializable {
	let rawValue: Int

	static let read = Permissions(rawValue: 1)
	static let write = Permissions(rawValue: 2)
}

/// A set-algebra type of its own, stored as an array.
struct Flags<Element: Hashable & Defaults.Serializable>: SetAlgebra, Defaults.SetAlgebraSerializable {
	private var storage: Set<Element> = []

	init() {}

	init(_ elements: [Element]) {
		storage = Set(elements)
	}

	func toArray() -> [Element] { Array(storage) }
	func contains(_ member: Element) -> Bool { storage.contains(member) }
	func union(_ other: Flags) -> Flags { Flags(Array(storage.union(other.storage))) }
	func intersection(_ other: Flags) -> Flags { Flags(Array(storage.intersection(other.storage))) }
	func symmetricDifference(_ other: Flags) -> Flags { Flags(Array(storage.symmetricDifference(other.storage))) }
	mutating func insert(_ newMember: Element) -> (inserted: Bool, memberAfterInsert: Element) {
		storage.insert(newMember)
	}
	mutating func remove(_ member: Element) -> Element? { storage.remove(member) }
	mutating func update(with newMember: Element) -> Element? { storage.update(with: newMember) }
	mutating func formUnion(_ other: Flags) { storage.formUnion(other.storage) }
	mutating func formIntersection(_ other: Flags) { storage.formIntersection(other.storage) }
	mutating func formSymmetricDifference(_ other: Flags) { storage.formSymmetricDifference(other.storage) }
}

/// A collection of its own, stored as an array.
struct Bag<Element: Defaults.Serializable>: Collection, Defaults.CollectionSerializable {
	private var items: [Element]

	init(_ elements: [Element]) {
		items = elements
	}

	var startIndex: Int { items.startIndex }
	var endIndex: Int { items.endIndex }
	subscript(position: Int) -> Element { items[position] }
	func index(after index: Int) -> Int { items.index(after: index) }
}

extension Bag: Equatable where Element: Equatable {}
