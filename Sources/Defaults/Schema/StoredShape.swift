import Foundation

/// The structure of a key's stored form, as far as a sample of it shows: what the schema file keeps so that the
/// `defaults` command, which cannot run the app's bridges, can tell a stored value that cannot decode.
///
/// Derived in the app from the stored form of a value the key holds (its default, or a sample the catalog gives) and
/// from that value's own structure (`Mirror`): a `Codable` value's JSON text is described as JSON (its fields and
/// their kinds; a field is required when it is a stored property of a struct or class that is not optional, the one
/// case where the synthesised `Decodable` refuses a value without it). Everything the sample cannot show is left
/// unknown, and an unknown part accepts any value: a check by shape may miss a value that does not decode, but never
/// reports one that does (unless a type's own `init(from:)` or bridge reads forms its encoder never writes).
package indirect enum StoredShape: Sendable, Equatable {
	/// Property-list scalars.
	case string, integer, real, boolean, date, data
	/// A JSON number (JSON does not tell an integer from a real written without a fraction).
	case number
	/// An array whose elements all have one shape; `nil`: unknown (the sample had none, or elements of several).
	case array(StoredShape?)
	/// A dictionary whose entries all have one shape and whose names are the data's own: a Swift dictionary.
	case map(StoredShape?)
	/// A dictionary with named fields: a struct, a class or an enum's case.
	case record([String: Field])
	/// Text holding JSON (the stored form of a `Codable` value) of the shape given; `nil`: any JSON.
	case jsonText(StoredShape?)

	/// A field of a ``record(_:)``.
	package struct Field: Sendable, Equatable {
		/// The field's shape; `nil`: unknown.
		package var shape: StoredShape?
		/// Whether a value without the field cannot decode.
		package var isRequired: Bool
	}

	/// The shape of `storedForm`, the stored form of `value` (the value the app holds, whose structure says which
	/// fields are required and which dictionaries are the data's own).
	static func of(storedForm: Any, value: Any?) -> StoredShape? {
		switch storedForm {
		case let text as String:
			if let value, !(unwrapped(value) is String), let json = jsonText(text, encoding: unwrapped(value)) {
				return .jsonText(of(json: json, value: value))
			}
			return .string
		case is Bool: return .boolean
		case is any BinaryInteger: return .integer
		case is any BinaryFloatingPoint: return .real
		case is Date: return .date
		case is Data: return .data
		case let array as [Any]:
			let children = value.flatMap(orderedChildren(of:))
			let shapes = array.enumerated().map { index, element in
				of(storedForm: element, value: children.flatMap { index < $0.count ? $0[index] : nil })
			}
			return .array(merged(shapes))
		case let dictionary as [String: Any]:
			if value.map(isDictionary) ?? true {
				return .map(merged(dictionary.values.map { of(storedForm: $0, value: nil) }))
			}
			// A custom bridge may read a dictionary without a field its encoder writes: none is required.
			let labelled = value.map(labelledChildren(of:)) ?? [:]
			var fields: [String: Field] = [:]
			for (name, element) in dictionary {
				fields[name] = Field(shape: of(storedForm: element, value: labelled[name]), isRequired: false)
			}
			return .record(fields)
		default:
			return nil
		}
	}

	/// The shape of `json`, the JSON a `Codable` `value` encodes to.
	private static func of(json: JSONValue, value: Any?) -> StoredShape? {
		switch json {
		case .null: return nil
		case .bool: return .boolean
		case .number: return .number
		case .string: return .string
		case .array(let elements):
			let children = value.flatMap(orderedChildren(of:))
			return .array(
				merged(
					elements.enumerated().map { index, element in
						of(json: element, value: children.flatMap { index < $0.count ? $0[index] : nil })
					}))
		case .object(let fields):
			guard let value, !isDictionary(value) else {
				return .map(merged(fields.values.map { of(json: $0, value: nil) }))
			}
			let isEnum = Mirror(reflecting: unwrapped(value)).displayStyle == .enum
			let labelled = labelledChildren(of: value)
			var described: [String: Field] = [:]
			for (name, field) in fields {
				let child = labelled[name]
				// A field named after a stored property that is not optional: synthesised decoding needs it. An enum's
				// case is one of several, and a name the properties do not have is a coding key of the type's own.
				let isRequired = !isEnum && child.map { Mirror(reflecting: $0).displayStyle != .optional } ?? false
				described[name] = Field(shape: of(json: field, value: child), isRequired: isRequired)
			}
			return .record(described)
		}
	}

	/// One shape for values of `shapes`: theirs when they agree, fields merged (required where every one has it);
	/// unknown when they disagree or there are none.
	static func merged(_ shapes: [StoredShape?]) -> StoredShape? {
		guard var result = shapes.first ?? nil else {
			return nil
		}
		for shape in shapes.dropFirst() {
			guard let shape, let next = merged(result, shape) else {
				return nil
			}
			result = next
		}
		return result
	}

	private static func merged(_ a: StoredShape, _ b: StoredShape) -> StoredShape? {
		switch (a, b) {
		case (.record(let x), .record(let y)):
			var fields: [String: Field] = [:]
			for name in Set(x.keys).union(y.keys) {
				// A field one value lacks is described by the other; one both have, by both.
				let shape =
					x[name] == nil
					? y[name]?.shape : y[name] == nil ? x[name]?.shape : merged([x[name]?.shape, y[name]?.shape])
				fields[name] = Field(
					shape: shape, isRequired: x[name]?.isRequired == true && y[name]?.isRequired == true)
			}
			return .record(fields)
		case (.array(let x), .array(let y)):
			return .array(merged([x, y]))
		case (.map(let x), .map(let y)):
			return .map(merged([x, y]))
		case (.jsonText(let x), .jsonText(let y)):
			return .jsonText(merged([x, y]))
		default:
			return a == b ? a : nil
		}
	}

	/// `text` as JSON, when it is the JSON `value` encodes to with the Codable bridges' one configuration
	/// (`JSONText`), so that text that only looks like JSON, such as a raw value `"1"`, is text.
	private static func jsonText(_ text: String, encoding value: Any) -> JSONValue? {
		guard let stored = JSONValue(text: text), let encodable = value as? any Encodable,
			let encoded = (try? JSONText.encode(encodable)).flatMap(JSONValue.init(text:)), encoded == stored
		else {
			return nil
		}
		return stored
	}

	private static func unwrapped(_ value: Any) -> Any {
		let mirror = Mirror(reflecting: value)
		guard mirror.displayStyle == .optional, let wrapped = mirror.children.first else {
			return value
		}
		return unwrapped(wrapped.value)
	}

	private static func isDictionary(_ value: Any) -> Bool {
		Mirror(reflecting: unwrapped(value)).displayStyle == .dictionary
	}

	/// The elements of an array, in order; `nil` for anything else (a set's order is not its stored order).
	private static func orderedChildren(of value: Any) -> [Any]? {
		let mirror = Mirror(reflecting: unwrapped(value))
		return mirror.displayStyle == .collection ? mirror.children.map(\.value) : nil
	}

	/// The stored properties of a struct or class, or the payload of an enum's case, by name.
	private static func labelledChildren(of value: Any) -> [String: Any] {
		let mirror = Mirror(reflecting: unwrapped(value))
		guard [.struct, .class, .enum].contains(mirror.displayStyle) else {
			return [:]
		}
		var children: [String: Any] = [:]
		for child in mirror.children {
			if let label = child.label {
				children[label] = child.value
			}
		}
		return children
	}
}

/// A JSON value, decoded by the package's own rules so that `true` and `1` stay apart (Foundation's `JSONSerialization`
/// gives both as `NSNumber`).
package enum JSONValue: Equatable, Decodable, Sendable {
	case null
	case bool(Bool)
	case number(Double)
	case string(String)
	case array([JSONValue])
	case object([String: JSONValue])

	package init(from decoder: any Decoder) throws {
		let container = try decoder.singleValueContainer()
		if container.decodeNil() {
			self = .null
		} else if let bool = try? container.decode(Bool.self) {
			self = .bool(bool)
		} else if let number = try? container.decode(Double.self) {
			self = .number(number)
		} else if let string = try? container.decode(String.self) {
			self = .string(string)
		} else if let array = try? container.decode([JSONValue].self) {
			self = .array(array)
		} else {
			self = .object(try container.decode([String: JSONValue].self))
		}
	}

	/// The JSON in `text`, or `nil` when it is not JSON.
	package init?(text: String) {
		self.init(data: Data(text.utf8))
	}

	package init?(data: Data) {
		guard let value = try? JSONDecoder().decode(JSONValue.self, from: data) else {
			return nil
		}
		self = value
	}
}

extension StoredShape {
	/// Why the stored `value` cannot be of this shape, in a phrase (`width is a string, not a number`); `nil` when it
	/// may be. Only what the shape knows is checked: an unknown part, a field it does not name and a JSON `null`
	/// are accepted.
	package func problem(with value: Any) -> String? {
		problem(with: value, at: "")
	}

	private func problem(with value: Any, at path: String) -> String? {
		let found = { Self.withArticle(Defaults.PropertyList.typeName(of: value)) }
		switch self {
		case .string, .integer, .real, .number, .boolean, .date, .data:
			let fits: Bool
			switch self {
			case .string: fits = value is String
			case .integer: fits = value is any BinaryInteger
			case .real, .number: fits = value is any BinaryFloatingPoint || value is any BinaryInteger
			case .boolean: fits = value is Bool || value is any BinaryInteger
			case .date: fits = value is Date
			default: fits = value is Data
			}
			return fits ? nil : Self.mismatch(at: path, found: found(), expected: expected)
		case .array(let element):
			guard let array = value as? [Any] else {
				return Self.mismatch(at: path, found: found(), expected: expected)
			}
			guard let element else {
				return nil
			}
			for (index, item) in array.enumerated() {
				if let problem = element.problem(with: item, at: "\(path)[\(index)]") {
					return problem
				}
			}
			return nil
		case .map(let element):
			guard let dictionary = value as? [String: Any] else {
				return Self.mismatch(at: path, found: found(), expected: "a dictionary")
			}
			guard let element else {
				return nil
			}
			for name in dictionary.keys.sorted() {
				if let problem = element.problem(with: dictionary[name]!, at: "\(path)[\"\(name)\"]") {
					return problem
				}
			}
			return nil
		case .record(let fields):
			guard let dictionary = value as? [String: Any] else {
				return Self.mismatch(at: path, found: found(), expected: "a dictionary")
			}
			for name in fields.keys.sorted() {
				guard let item = dictionary[name] else {
					if fields[name]!.isRequired {
						return Self.missing(name, at: path)
					}
					continue
				}
				if let problem = fields[name]!.shape?.problem(with: item, at: Self.field(name, of: path)) {
					return problem
				}
			}
			return nil
		case .jsonText(let content):
			guard let text = value as? String else {
				return Self.mismatch(at: path, found: found(), expected: "JSON text, as a Codable value is stored")
			}
			guard let json = JSONValue(text: text) else {
				return
					"\(path.isEmpty ? "" : "\(path) is ")text that is not JSON, where a Codable value is stored as JSON"
			}
			return content?.problem(withJSON: json, at: path)
		}
	}

	private func problem(withJSON json: JSONValue, at path: String) -> String? {
		let found: String
		switch json {
		case .null:
			// `null` is what an optional property or element encodes to: the shape cannot tell them apart.
			return nil
		case .bool: found = "true or false"
		case .number: found = "a number"
		case .string: found = "a string"
		case .array: found = "an array"
		case .object: found = "an object"
		}
		switch (self, json) {
		case (.string, .string), (.number, .number), (.integer, .number), (.real, .number), (.boolean, .bool):
			return nil
		case (.array(let element), .array(let items)):
			guard let element else {
				return nil
			}
			for (index, item) in items.enumerated() {
				if let problem = element.problem(withJSON: item, at: "\(path)[\(index)]") {
					return problem
				}
			}
			return nil
		case (.map(let element), .object(let entries)):
			guard let element else {
				return nil
			}
			for name in entries.keys.sorted() {
				if let problem = element.problem(withJSON: entries[name]!, at: "\(path)[\"\(name)\"]") {
					return problem
				}
			}
			return nil
		case (.record(let fields), .object(let entries)):
			for name in fields.keys.sorted() {
				guard let item = entries[name] else {
					if fields[name]!.isRequired {
						return Self.missing(name, at: path)
					}
					continue
				}
				if let problem = fields[name]!.shape?.problem(withJSON: item, at: Self.field(name, of: path)) {
					return problem
				}
			}
			return nil
		default:
			let expected: String
			switch self {
			case .string: expected = "a string"
			case .boolean: expected = "true or false"
			case .array: expected = "an array"
			case .map, .record: expected = "an object"
			default: expected = "a number"
			}
			return Self.mismatch(at: path, found: found, expected: expected)
		}
	}

	/// What a stored value of this shape is, in a phrase.
	private var expected: String {
		switch self {
		case .string: "text"
		case .integer: "an integer"
		case .real, .number: "a number"
		case .boolean: "a boolean"
		case .date: "a date"
		case .data: "data"
		case .array: "an array"
		case .map, .record: "a dictionary"
		case .jsonText: "JSON text"
		}
	}

	private static func mismatch(at path: String, found: String, expected: String) -> String {
		path.isEmpty ? "\(found), not \(expected)" : "\(path) is \(found), not \(expected)"
	}

	private static func missing(_ name: String, at path: String) -> String {
		path.isEmpty ? "the field '\(name)' is missing" : "\(path) has no field '\(name)'"
	}

	private static func field(_ name: String, of path: String) -> String {
		path.isEmpty ? name : "\(path).\(name)"
	}

	private static func withArticle(_ kind: String) -> String {
		("aeiou".contains(kind.first ?? "x") ? "an " : "a ") + kind
	}
}

// The schema file keeps a shape as a property list: `{ kind = record; fields = { width = { kind = number;
// required = 1; }; }; }`. A kind this reader does not know reads as unknown, so that a newer app's schema never makes
// an older command report a value that decodes.
extension StoredShape {
	/// The shape as the schema file keeps it.
	var propertyList: [String: Any] {
		switch self {
		case .string: ["kind": "string"]
		case .integer: ["kind": "integer"]
		case .real: ["kind": "real"]
		case .number: ["kind": "number"]
		case .boolean: ["kind": "boolean"]
		case .date: ["kind": "date"]
		case .data: ["kind": "data"]
		case .array(let element): Self.withContent(["kind": "array"], "element", element)
		case .map(let element): Self.withContent(["kind": "map"], "element", element)
		case .jsonText(let content): Self.withContent(["kind": "json"], "content", content)
		case .record(let fields):
			[
				"kind": "record",
				"fields": fields.mapValues { field in
					var described = field.shape?.propertyList ?? ["kind": "any"]
					described["required"] = field.isRequired
					return described
				},
			]
		}
	}

	private static func withContent(_ base: [String: Any], _ name: String, _ shape: StoredShape?) -> [String: Any] {
		var described = base
		described[name] = shape?.propertyList ?? ["kind": "any"]
		return described
	}

	/// The shape the schema file's `described` keeps; `nil` for one unknown (`any`, or a kind this does not know).
	init?(propertyList described: Any?) {
		guard let described = described as? [String: Any], let kind = described["kind"] as? String else {
			return nil
		}
		switch kind {
		case "string": self = .string
		case "integer": self = .integer
		case "real": self = .real
		case "number": self = .number
		case "boolean": self = .boolean
		case "date": self = .date
		case "data": self = .data
		case "array": self = .array(StoredShape(propertyList: described["element"]))
		case "map": self = .map(StoredShape(propertyList: described["element"]))
		case "json": self = .jsonText(StoredShape(propertyList: described["content"]))
		case "record":
			var fields: [String: Field] = [:]
			for (name, field) in described["fields"] as? [String: Any] ?? [:] {
				fields[name] = Field(
					shape: StoredShape(propertyList: field),
					isRequired: (field as? [String: Any])?["required"] as? Bool ?? false)
			}
			self = .record(fields)
		default: return nil
		}
	}
}
