import Defaults
import Foundation

/// A settings struct of five fields, stored through its `Codable` conformance (JSON text).
public struct Profile: Codable, Equatable, Sendable, Defaults.Serializable {
	public var name: String
	public var age: Int
	public var email: String
	public var isAdmin: Bool
	public var score: Double

	public init(name: String, age: Int, email: String, isAdmin: Bool, score: Double) {
		self.name = name
		self.age = age
		self.email = email
		self.isAdmin = isAdmin
		self.score = score
	}
}

/// A settings struct of plain fields only (numbers and a flag: no `String`, nothing that points to memory), stored
/// through its `Codable` conformance (JSON text) as `Profile` is: a copy of it is its bits, so its cached read retains
/// and releases nothing.
public struct WindowFrame: Codable, Equatable, Sendable, Defaults.Serializable {
	public var x: Double
	public var y: Double
	public var width: Double
	public var height: Double
	public var isFullScreen: Bool

	public init(x: Double, y: Double, width: Double, height: Double, isFullScreen: Bool) {
		self.x = x
		self.y = y
		self.width = width
		self.height = height
		self.isFullScreen = isFullScreen
	}
}

/// An enum stored as its raw value.
public enum Theme: String, Sendable, Defaults.Serializable {
	case light, dark, system
}

/// The nested collection of the suite.
public typealias Nested = [[String: Set<[String: Int]>]]

/// The values every benchmark stores and reads.
public enum Samples {
	public static let int = 42
	public static let bool = true
	public static let double = 0.75
	public static let string = "The quick brown fox jumps over the lazy dog"
	/// 1 KB of bytes.
	public static let data = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 31) })
	public static let date = Date(timeIntervalSinceReferenceDate: 785_000_000.125)
	public static let profile = Profile(
		name: "Ada Lovelace", age: 36, email: "ada@example.com", isAdmin: true, score: 99.5)
	public static let frame = WindowFrame(x: 120, y: 80, width: 1_280, height: 800, isFullScreen: false)
	public static let theme = Theme.dark
	/// 100 strings.
	public static let strings = (0..<100).map { "item-\($0)" }
	/// 20 values of mixed types.
	public static let mixed: [String: Defaults.AnySerializable] = {
		var values: [String: Defaults.AnySerializable] = [:]
		for index in 0..<4 {
			values["int\(index)"] = Defaults.AnySerializable(index * 1_000)
			values["string\(index)"] = Defaults.AnySerializable("value \(index)")
			values["double\(index)"] = Defaults.AnySerializable(Double(index) + 0.5)
			values["bool\(index)"] = Defaults.AnySerializable(index.isMultiple(of: 2))
		}
		values["date"] = Defaults.AnySerializable(date)
		values["data"] = Defaults.AnySerializable(Data([1, 2, 3, 4]))
		values["array"] = Defaults.AnySerializable(["a", "b", "c"])
		values["dictionary"] = Defaults.AnySerializable(["x": 1, "y": 2])
		return values
	}()
	/// The same 20 values as Foundation property-list values, as a `UserDefaults` user would store them.
	nonisolated(unsafe) public static let mixedPropertyList: [String: Any] = mixed.mapValues { $0.propertyListValue! }
	/// 3 dictionaries of 3 sets of 3 dictionaries of 2 integers.
	public static let nested: Nested = (0..<3).map { outer in
		Dictionary(
			uniqueKeysWithValues: (0..<3).map { middle in
				(
					"set\(middle)",
					Set((0..<3).map { inner in ["a": outer * 100 + middle * 10 + inner, "b": inner] })
				)
			})
	}
}
