import Foundation

extension Defaults {
	/// What a property-list value is, in the one shape every store hands back.
	///
	/// Foundation returns the same stored value as different Swift types depending on the platform and on whether
	/// the value was reloaded from disk (`Int64` for a large `Int`, `Double` for a `Float`, `[Any?]` for an array
	/// on Linux). The package normalises every value that enters a store to these shapes, and stores return them:
	///
	/// | stored | Swift type |
	/// |---|---|
	/// | booleans | `Bool` |
	/// | integers | `Int`; `UInt64` only above `Int.max` |
	/// | reals (`Float`, `Double`, `CGFloat`) | `Double` |
	/// | strings, data, dates | `String`, `Data`, `Date` |
	/// | arrays, dictionaries | `[Any]`, `[String: Any]` of the above |
	public enum PropertyList {
		/// The type word of a stored value, as macOS `defaults read-type` prints it: string, integer, float, boolean,
		/// date, data, array or dictionary (`unknown` for anything else). Every integer width is an integer and every
		/// floating-point width a float, as a reader of the file sees them.
		package static func typeName(of value: Any) -> String {
			switch value {
			case is Bool: "boolean"
			case is any BinaryInteger: "integer"
			case is any BinaryFloatingPoint: "float"
			case is String: "string"
			case is Date: "date"
			case is Data: "data"
			case is [Any]: "array"
			case is [String: Any]: "dictionary"
			default: "unknown"
			}
		}

		/// A value that cannot be stored as a property list.
		public struct Error: Swift.Error, Sendable, CustomStringConvertible {
			/// Where in the value the problem is, such as `[2]["name"]`; empty at the top level.
			public let path: String
			/// What is wrong.
			public let reason: String

			/// The path and the reason, as one sentence.
			public var description: String {
				path.isEmpty ? reason : "at \(path): \(reason)"
			}

			func nested(in component: String) -> Error {
				Error(path: component + path, reason: reason)
			}
		}

		/// How deeply containers may nest inside one stored value: `[[1]]` nests 2 deep.
		///
		/// Every reader of settings files in this package stops at this depth (with the file's top-level dictionary,
		/// files are one level deeper), and ``normalize(_:)`` refuses deeper values, so that nothing written can make
		/// the file unreadable. Foundation's own readers stop at 511 levels.
		package static let maximumDepth = 255

		/// Converts a value met where a property-list value is expected (a ``Defaults/Serializable`` value inside a
		/// collection written to a store) to its property-list form; `nil` when it does not know the value.
		///
		/// Storage knows only property-list values: the conversion is handed in by the layer that knows bridges
		/// (see `PropertyList+Serializable.swift`), and the normaliser of stored values read back passes none.
		typealias OtherValueConversion = (Any) throws(Error) -> Any?

		/// `value` normalised, where `depth` containers enclose it: checked at each container, so that a value
		/// nested far too deep is refused after `maximumDepth` levels of recursion, not a stack overflow.
		static func normalize(
			_ value: Any, depth: Int, convertingOther convert: OtherValueConversion? = nil
		) throws(Error) -> Any {
			// Foundation's parsers hand numbers back as `NSNumber`, which casts to `Int` even when it holds a real:
			// its own type code is the only reliable account of what was stored.
			// The type test comes first: on Linux `as? NSNumber` also succeeds for a Swift `Int`, by boxing it.
			if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
				return normalize(number: number)
			}
			switch value {
			case let value as Bool: return value
			case let value as Int: return value
			case let value as String: return value
			case let value as Double: return value
			case let value as Data: return value
			case let value as Date: return try checked(value)
			case let value as [Any]: return try normalize(array: value, depth: depth + 1, convertingOther: convert)
			case let value as [String: Any]:
				return try normalize(dictionary: value, depth: depth + 1, convertingOther: convert)
			default: break
			}
			if let number = normalizeNumber(value) {
				return number
			}
			if let substring = value as? Substring {
				return String(substring)
			}
			if let dictionary = value as? [AnyHashable: Any] {
				var strings = [String: Any](minimumCapacity: dictionary.count)
				for (key, element) in dictionary {
					guard let key = key.base as? String else {
						throw Error(
							path: "", reason: "dictionary key \(key.base) is a \(type(of: key.base)), not a String")
					}
					strings[key] = element
				}
				return try normalize(dictionary: strings, depth: depth + 1, convertingOther: convert)
			}
			#if canImport(ObjectiveC)
				if let array = value as? NSArray {
					return try normalize(array: array.map { $0 }, depth: depth + 1, convertingOther: convert)
				}
			#endif
			if let optional = value as? any OptionalProtocol {
				guard let wrapped = optional.wrappedAny else {
					throw Error(path: "", reason: "nil has no property-list form; remove the key instead")
				}
				return try normalize(wrapped, depth: depth, convertingOther: convert)
			}
			if let convert, let converted = try convert(value) {
				try checkDepth(depth + nestingDepth(of: converted))
				return converted
			}
			if let uid = FoundationUID.value(value) {
				// A keyed archive's object reference, in the form XML property lists spell it.
				return ["CF$UID": uid]
			}
			if value is Decimal {
				throw Error(
					path: "",
					reason:
						"Decimal has no exact property-list form; store its description, or make the key's type Codable"
				)
			}
			throw Error(path: "", reason: "a value of type \(type(of: value)) is not a property-list value")
		}

		private static func checkDepth(_ depth: Int) throws(Error) {
			guard depth <= maximumDepth else {
				throw Error(
					path: "",
					reason:
						"containers are nested more than \(maximumDepth) deep, more than readers of settings files read back"
				)
			}
		}

		private static func checked(_ date: Date) throws(Error) -> Date {
			guard date.timeIntervalSinceReferenceDate.isFinite else {
				throw Error(
					path: "",
					reason: "a date of \(date.timeIntervalSinceReferenceDate) seconds is not a point in time")
			}
			return date
		}

		private static func normalize(
			array: [Any], depth: Int, convertingOther convert: OtherValueConversion?
		) throws(Error) -> [Any] {
			try checkDepth(depth)
			var result = [Any]()
			result.reserveCapacity(array.count)
			for (index, element) in array.enumerated() {
				do {
					result.append(try normalize(element, depth: depth, convertingOther: convert))
				} catch {
					throw error.nested(in: "[\(index)]")
				}
			}
			return result
		}

		private static func normalize(
			dictionary: [String: Any], depth: Int, convertingOther convert: OtherValueConversion?
		) throws(Error) -> [String: Any] {
			try checkDepth(depth)
			var result = [String: Any](minimumCapacity: dictionary.count)
			for (key, element) in dictionary {
				do {
					result[key] = try normalize(element, depth: depth, convertingOther: convert)
				} catch {
					throw error.nested(in: "[\"\(key)\"]")
				}
			}
			return result
		}

		/// Every integer width, `Float`, `CGFloat` and Foundation's `NSNumber` in their normalised shape.
		static func normalizeNumber(_ value: Any) -> Any? {
			switch value {
			case let value as Int8: return Int(value)
			case let value as Int16: return Int(value)
			case let value as Int32: return Int(value)
			case let value as Int64: return Int(value)
			case let value as UInt8: return Int(value)
			case let value as UInt16: return Int(value)
			case let value as UInt32: return Int(value)
			case let value as UInt: return Int(exactly: value) ?? UInt64(value)
			case let value as UInt64: return Int(exactly: value) ?? value
			case let value as Float: return Double(value)
			case let value as CGFloat: return Double(value)
			default: break
			}
			return nil
		}

		private static func normalize(number: NSNumber) -> Any {
			#if canImport(ObjectiveC)
				if CFGetTypeID(number) == CFBooleanGetTypeID() {
					return number.boolValue
				}
			#endif
			switch UInt8(bitPattern: number.objCType.pointee) {
			case UInt8(ascii: "f"), UInt8(ascii: "d"):
				return number.doubleValue
			case UInt8(ascii: "B"):
				return number.boolValue
			case UInt8(ascii: "Q"), UInt8(ascii: "L"), UInt8(ascii: "I"), UInt8(ascii: "S"), UInt8(ascii: "C"):
				return Int(exactly: number.uint64Value) ?? number.uint64Value
			default:
				return number.intValue
			}
		}

		/// Whether two stored values are equal, `nil` standing for nothing stored: equal when both are absent.
		package static func isEqualOrBothAbsent(_ lhs: Any?, _ rhs: Any?) -> Bool {
			switch (lhs, rhs) {
			case (nil, nil): true
			case let (lhs?, rhs?): isEqual(lhs, rhs)
			default: false
			}
		}

		/// Whether two normalised property-list values are equal.
		package static func isEqual(_ lhs: Any, _ rhs: Any) -> Bool {
			switch (lhs, rhs) {
			case let (lhs as Bool, rhs as Bool): return lhs == rhs
			case let (lhs as Int, rhs as Int): return lhs == rhs
			case let (lhs as UInt64, rhs as UInt64): return lhs == rhs
			// NaN is not equal to itself; a stored NaN is the same stored form as the same NaN bits, so that an
			// unchanged NaN never reads as a change.
			case let (lhs as Double, rhs as Double): return lhs == rhs || lhs.bitPattern == rhs.bitPattern
			case let (lhs as String, rhs as String): return lhs == rhs
			case let (lhs as Data, rhs as Data): return lhs == rhs
			case let (lhs as Date, rhs as Date):
				return lhs == rhs
					|| lhs.timeIntervalSinceReferenceDate.bitPattern == rhs.timeIntervalSinceReferenceDate.bitPattern
			case let (lhs as [Any], rhs as [Any]):
				return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { isEqual($0, $1) }
			case let (lhs as [String: Any], rhs as [String: Any]):
				return lhs.count == rhs.count
					&& lhs.allSatisfy { key, value in rhs[key].map { isEqual(value, $0) } ?? false }
			default: return false
			}
		}

		/// Feeds a normalised property-list value into `hasher`, consistently with ``isEqual(_:_:)``.
		package static func hash(_ value: Any, into hasher: inout Hasher) {
			switch value {
			case let value as Bool: hasher.combine(0); hasher.combine(value)
			case let value as Int: hasher.combine(1); hasher.combine(value)
			case let value as UInt64: hasher.combine(2); hasher.combine(value)
			case let value as Double: hasher.combine(3); hashReal(value, into: &hasher)
			case let value as String: hasher.combine(4); hasher.combine(value)
			case let value as Data: hasher.combine(5); hasher.combine(value)
			case let value as Date: hasher.combine(6); hashReal(value.timeIntervalSinceReferenceDate, into: &hasher)
			case let value as [Any]:
				hasher.combine(7)
				hasher.combine(value.count)
				for element in value { hash(element, into: &hasher) }
			case let value as [String: Any]:
				hasher.combine(8)
				hasher.combine(value.count)
				// Order-independent, like the dictionary's equality.
				var combined = 0
				for (key, element) in value {
					var entry = Hasher()
					entry.combine(key)
					hash(element, into: &entry)
					combined ^= entry.finalize()
				}
				hasher.combine(combined)
			default: hasher.combine(9)
			}
		}

		/// NaNs by their bits, as ``isEqual(_:_:)`` compares them; other reals by value, so that 0 and -0 agree.
		private static func hashReal(_ value: Double, into hasher: inout Hasher) {
			if value.isNaN {
				hasher.combine(value.bitPattern)
			} else {
				hasher.combine(value)
			}
		}

		/// How many containers deep `value` nests, counted without recursion.
		static func nestingDepth(of value: Any) -> Int {
			var deepest = 0
			var pending: [(value: Any, depth: Int)] = [(value, 0)]
			while let (next, depth) = pending.popLast() {
				let children: [Any]
				switch next {
				case let array as [Any]: children = array
				case let dictionary as [String: Any]: children = Array(dictionary.values)
				default: continue
				}
				deepest = max(deepest, depth + 1)
				if deepest > maximumDepth {
					return deepest
				}
				pending.append(contentsOf: children.lazy.map { ($0, depth + 1) })
			}
			return deepest
		}
	}
}
