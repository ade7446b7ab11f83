import Defaults
import Foundation

/// One value of one built-in stored form: a row of the stored-forms table, pinned by a fixture entry.
///
/// The value is written and read through a typed key, so a sample checks the whole path: bridge, normaliser, store.
public struct StoredFormSample: @unchecked Sendable {
	/// The fixture file the golden form lives in: `Fixtures/StoredForms/<family>.plist`.
	public let family: String
	/// The key name, and the entry name in the fixture file.
	public let name: String
	/// Whether writing the value removes the key (an optional set to nil).
	public let removesKey: Bool

	private let writeValue: (any Defaults.Store) -> Void
	private let mismatch: (any Defaults.Store) -> String?

	init<Value: Defaults.Serializable & Equatable>(
		_ family: String, _ name: String, _ value: Value, default defaultValue: Value,
		bridge: Defaults.AnyBridge<Value>? = nil
	) {
		precondition(value != defaultValue, "a sample's value must differ from its default")
		self.family = family
		self.name = name
		self.removesKey = false
		self.writeValue = { store in
			store[Defaults.Key<Value>(name, default: defaultValue, suite: store, bridge: bridge)] = value
		}
		self.mismatch = { store in
			let read = store[Defaults.Key<Value>(name, default: defaultValue, suite: store, bridge: bridge)]
			return read == value ? nil : "\(name): expected \(value), read \(read)"
		}
	}

	init<Wrapped: Defaults.Serializable & Equatable>(_ family: String, removing name: String, as: Wrapped.Type) {
		self.family = family
		self.name = name
		self.removesKey = true
		self.writeValue = { store in
			store[Defaults.Key<Wrapped?>(name, suite: store)] = nil
		}
		self.mismatch = { store in
			let read = store[Defaults.Key<Wrapped?>(name, suite: store)]
			return read == nil ? nil : "\(name): expected nil, read \(String(describing: read))"
		}
	}

	/// Writes the sample's value through its key.
	public func write(to store: any Defaults.Store) {
		writeValue(store)
	}

	/// Reads the key back: `nil` when it reads as the sample's value, else what was read instead.
	public func mismatch(in store: any Defaults.Store) -> String? {
		mismatch(store)
	}
}

extension StoredFormSample {
	/// A date with whole seconds, which every property-list format keeps exactly.
	public static let wholeSecondDate = Date(timeIntervalSinceReferenceDate: 700_000_000)

	/// Every row of the stored-forms table, with the edge values of each.
	public static let all: [StoredFormSample] = [
		// Native property-list values.
		.init("Native", "bool", true, default: false),
		.init("Native", "int", -42, default: 0),
		.init("Native", "intMax", Int.max, default: 0),
		.init("Native", "intMin", Int.min, default: 0),
		.init("Native", "int8", Int8.min, default: 0),
		.init("Native", "int16", Int16.max, default: 0),
		.init("Native", "int32", Int32.min, default: 0),
		.init("Native", "int64", Int64.max, default: 0),
		.init("Native", "uint", UInt.max, default: 0),
		.init("Native", "uint8", UInt8.max, default: 0),
		.init("Native", "uint16", UInt16.max, default: 0),
		.init("Native", "uint32", UInt32.max, default: 0),
		.init("Native", "uint64", UInt64.max, default: 0),
		.init("Native", "double", 0.1, default: 0),
		.init("Native", "float", Float(1.1), default: 0),
		.init("Native", "cgFloat", CGFloat(2.5), default: 0),
		.init("Native", "string", "héllo, wörld 🦄", default: ""),
		.init("Native", "data", Data([0, 1, 2, 254, 255]), default: Data()),
		.init("Native", "date", wholeSecondDate, default: Date(timeIntervalSince1970: 0)),

		// Codable: JSON text with sorted keys.
		.init(
			"Codable", "struct", Window(width: 800, height: 600, title: "Main / \"quoted\""),
			default: Window(width: 0, height: 0, title: "")),
		.init(
			"Codable", "class", Profile(name: "Ada", tags: ["math", "engines"]), default: Profile(name: "", tags: [])),
		.init("Codable", "enumWithAssociatedValue", Shape.circle(radius: 2.5), default: .square),
		.init("Codable", "enumWithoutAssociatedValue", Shape.square, default: .circle(radius: 1)),

		// RawRepresentable.
		.init("RawRepresentable", "codableString", Letter.alpha, default: .beta),
		.init("RawRepresentable", "codableInt", Size.small, default: .large),
		.init("RawRepresentable", "rawString", Theme.dark, default: .light),
		.init("RawRepresentable", "preferRawRepresentable", Mime.json, default: .text),
		.init("RawRepresentable", "optionSet", Permissions([.read, .write]), default: []),

		// NSSecureCoding.
		.init("SecureCoding", "archive", Bookmark(path: "/tmp/notes"), default: Bookmark(path: "")),
		.init("SecureCoding", "codableAndSecureCoding", Tag(name: "red"), default: Tag(name: "")),
		.init("SecureCoding", "preferNSSecureCoding", ArchivedTag(name: "blue"), default: ArchivedTag(name: "")),

		// Foundation values.
		.init(
			"Foundation", "url", URL(string: "https://example.com/a/b?c=d&e=f#g")!, default: URL(string: "file:///")!),
		.init("Foundation", "fileURL", URL(fileURLWithPath: "/tmp/a b.txt"), default: URL(string: "file:///")!),
		.init(
			"Foundation", "uuid", UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!,
			default: UUID(uuidString: "00000000-0000-0000-0000-000000000000")!),

		// Optional.
		.init("Optional", "some", Optional(7), default: nil),
		.init("Optional", "someString", Optional("set"), default: nil),
		.init("Optional", removing: "none", as: Int.self),

		// Collections.
		.init("Collections", "array", ["a", "b", "c"], default: []),
		.init("Collections", "arrayOfInt8", [Int8(-1), 2], default: []),
		.init("Collections", "arrayOfCodable", [Window(width: 1, height: 2, title: "x")], default: []),
		.init("Collections", "arrayOfCustomBridge", [User(name: "Ada", age: 36)], default: []),
		.init("Collections", "set", Set([3, 1, 2]), default: []),
		.init("Collections", "setOfStrings", Set(["b", "a"]), default: []),
		.init("Collections", "dictionary", ["one": 1, "two": 2], default: [:]),
		.init("Collections", "dictionaryWithIntKeys", [1: "one", 2: "two"], default: [:]),
		.init(
			"Collections", "dictionaryOfUUID", ["id": UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!],
			default: [:]),
		.init("Collections", "collectionSerializable", Bag([1, 2, 2]), default: Bag([])),
		.init("Collections", "setAlgebraSerializable", Flags(["only"]), default: Flags()),
		.init("Collections", "nested", [["groups": Set([["a": 1], ["b": 2]])]], default: []),
		.init("Collections", "nestedCustomBridge", ["team": [User(name: "Grace", age: 45)]], default: [:]),

		// Ranges.
		.init("Ranges", "range", 1..<5, default: 0..<0),
		.init("Ranges", "closedRange", 0.5...1.5, default: 0...0),

		// Type-erased values.
		.init(
			"AnySerializable", "mixedDictionary",
			[
				"string": "🦄", "int": 3, "double": 1.5, "bool": true,
				"array": [1, "two"], "dictionary": ["nested": 1],
				"url": Defaults.AnySerializable(URL(string: "https://example.com")!),
			] as [String: Defaults.AnySerializable],
			default: [:]),
		.init("AnySerializable", "mixedArray", [1, "two", 3.5, false] as [Defaults.AnySerializable], default: []),

		// Element bridges named on the key: each element in the pinned form.
		.init("ElementBridges", "moneyArray", moneys, default: [], bridge: .array(of: moneyV2)),
		.init("ElementBridges", "arrayOfRawValues", [Letter.alpha, .beta], default: [], bridge: .array(of: .rawValue)),
		.init(
			"ElementBridges", "arrayOfJSONData", [Window(width: 1, height: 2, title: "x")], default: [],
			bridge: .array(of: .jsonData)),
		.init(
			"ElementBridges", "arrayOfOptionals", moneys.map { Optional($0) }, default: [],
			bridge: .array(of: .optional(moneyV2))),
		.init("ElementBridges", "moneySet", Set(moneys), default: [], bridge: .set(of: moneyV2)),
		.init("ElementBridges", "setOfRawValues", Set([Theme.dark, .light]), default: [], bridge: .set(of: .rawValue)),
		.init(
			"ElementBridges", "moneyDictionary", ["price": moneys[0], "fee": moneys[1]], default: [:],
			bridge: .dictionary(of: moneyV2)),
		.init(
			"ElementBridges", "moneyDictionaryWithIntKeys", [1: moneys[0], 2: moneys[1]], default: [:],
			bridge: .dictionary(of: moneyV2)),
		.init(
			"ElementBridges", "moneyDictionaryOfArrays", ["shop": moneys, "market": [moneys[1]]], default: [:],
			bridge: .dictionary(of: .array(of: moneyV2))),
	]

	/// Two amounts, one negative.
	public static let moneys = [Money(cents: 1234, currency: "EUR"), Money(cents: -5, currency: "USD")]

	/// The pinned element bridge of the element-bridge samples.
	public static let moneyV2 = Defaults.AnyBridge(MoneyBridgeV2())
}
