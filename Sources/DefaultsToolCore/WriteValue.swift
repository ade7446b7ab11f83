import Defaults
import Foundation

/// A type flag of `write`: `-int 5`, `-array a b`, and the others.
enum TypeFlag: String, CaseIterable {
	case string, integer, float, boolean, date, data, url, json, array, arrayAdd, dictionary, dictionaryAdd

	/// The flag for `token`, with macOS's spellings (`-int` and `-integer`, `-bool` and `-boolean`, `-dict`).
	init?(token: String) {
		switch token {
		case "-string": self = .string
		case "-int", "-integer": self = .integer
		case "-float": self = .float
		case "-bool", "-boolean": self = .boolean
		case "-date": self = .date
		case "-data": self = .data
		case "-url": self = .url
		case "-json": self = .json
		case "-array": self = .array
		case "-array-add": self = .arrayAdd
		case "-dict": self = .dictionary
		case "-dict-add": self = .dictionaryAdd
		default: return nil
		}
	}

	var isScalar: Bool {
		switch self {
		case .string, .integer, .float, .boolean, .date, .data, .url, .json: true
		case .array, .arrayAdd, .dictionary, .dictionaryAdd: false
		}
	}

	/// The flag as it is typed.
	var token: String {
		switch self {
		case .string: "-string"
		case .integer: "-int"
		case .float: "-float"
		case .boolean: "-bool"
		case .date: "-date"
		case .data: "-data"
		case .url: "-url"
		case .json: "-json"
		case .array: "-array"
		case .arrayAdd: "-array-add"
		case .dictionary: "-dict"
		case .dictionaryAdd: "-dict-add"
		}
	}
}

/// What `write` does to the key's value.
enum WriteRequest {
	/// Replace the value.
	case set(Any)
	/// Append to the array stored for the key, or store a new array.
	case appendToArray([Any])
	/// Add entries to the dictionary stored for the key, or store a new dictionary.
	case addToDictionary([String: Any])

	/// Reads the value part of `write <domain> <key> …`.
	init(tokens: [String]) throws(ToolError) {
		guard let first = tokens.first else {
			throw .usage("Missing value.", verb: "write")
		}
		if first == "--" {
			// `--` ends the options: what follows is text, even where it looks like a flag (`-- -h`).
			guard tokens.count == 2 else {
				throw .usage("-- takes one value: the text to write.", verb: "write")
			}
			self = .set(tokens[1])
			return
		}
		guard let flag = TypeFlag(token: first) else {
			if first.hasPrefix("-"), first != "-" {
				throw .usage(
					"Unknown type flag \"\(first)\". To write text that starts with \"-\", use -string.", verb: "write")
			}
			guard tokens.count == 1 else {
				throw .usage(
					"Too many values: a bare value is one argument (quote it), or use -array or -dict.", verb: "write")
			}
			self = .set(try Self.bareValue(first))
			return
		}
		let rest = Array(tokens.dropFirst())
		switch flag {
		case .array: self = .set(try Self.elements(rest))
		case .arrayAdd: self = .appendToArray(try Self.elements(rest))
		case .dictionary: self = .set(try Self.entries(rest, flag: flag))
		case .dictionaryAdd: self = .addToDictionary(try Self.entries(rest, flag: flag))
		default:
			guard rest.count == 1 else {
				throw .usage(
					rest.isEmpty ? "\(first) needs a value." : "\(first) takes one value; quote a value with spaces.",
					verb: "write")
			}
			self = .set(try Self.scalar(rest[0], as: flag))
		}
	}

	/// A bare value is text, unless it is a property list in text form (`(a, b)`, `{ a = 1; }`, XML), as with macOS.
	private static func bareValue(_ text: String) throws(ToolError) -> Any {
		guard let first = text.first(where: { !$0.isWhitespace }), "({<".contains(first) else {
			return text
		}
		do {
			return try PropertyListFile.decodeValue(Data(text.utf8))
		} catch {
			throw .badValue(
				"\"\(text)\" looks like a property list but \(error). To write it as text, use -string.")
		}
	}

	/// Array elements: each is text, or typed by a scalar flag before it (`-int 1 -bool yes`).
	private static func elements(_ tokens: [String]) throws(ToolError) -> [Any] {
		var values: [Any] = []
		var index = tokens.startIndex
		while index < tokens.endIndex {
			values.append(try typedValue(tokens, at: &index))
		}
		return values
	}

	/// Dictionary entries: key, value pairs; a value is text, or typed by a scalar flag before it.
	private static func entries(_ tokens: [String], flag: TypeFlag) throws(ToolError) -> [String: Any] {
		var values: [String: Any] = [:]
		var index = tokens.startIndex
		while index < tokens.endIndex {
			let key = tokens[index]
			index += 1
			guard index < tokens.endIndex else {
				throw .usage("\(flag.token) needs key and value pairs; the key \"\(key)\" has no value.", verb: "write")
			}
			values[key] = try typedValue(tokens, at: &index)
		}
		return values
	}

	private static func typedValue(_ tokens: [String], at index: inout Int) throws(ToolError) -> Any {
		let token = tokens[index]
		index += 1
		guard let flag = TypeFlag(token: token) else {
			return token
		}
		guard flag.isScalar else {
			throw .usage("\(flag.token) cannot be nested; write nested values as a property list.", verb: "write")
		}
		guard index < tokens.endIndex else {
			throw .usage("\(token) needs a value.", verb: "write")
		}
		defer { index += 1 }
		return try scalar(tokens[index], as: flag)
	}

	/// `text` read as the type `flag` names.
	static func scalar(_ text: String, as flag: TypeFlag) throws(ToolError) -> Any {
		switch flag {
		case .integer:
			let digits = text.hasPrefix("+") ? String(text.dropFirst()) : text
			if let integer = Int(digits) {
				return integer
			}
			if let large = UInt64(digits) {
				return large
			}
			throw .badValue("\"\(text)\" is not an integer.")
		case .float:
			guard let real = Double(text), real.isFinite else {
				throw .badValue("\"\(text)\" is not a finite number.")
			}
			return real
		case .boolean:
			switch text.lowercased() {
			case "yes", "true", "1": return true
			case "no", "false", "0": return false
			default: throw .badValue("\"\(text)\" is not a boolean: use yes, no, true, false, 1 or 0.")
			}
		case .date:
			guard let date = parseDate(text) else {
				throw .badValue(
					"\"\(text)\" is not a date: use ISO 8601 (2024-05-01T12:00:00Z), \"2024-05-01 12:00:00 +0000\" "
						+ "or 2024-05-01.")
			}
			return date
		case .data:
			guard let data = parseHex(text) else {
				throw .badValue("\"\(text)\" is not data: give an even number of hexadecimal digits, like 0badcafe.")
			}
			return data
		case .url:
			return try url(text)
		case .json:
			return try json(text)
		default:
			return text
		}
	}

	/// A URL as a `Key<URL>` stores it (JSON text, through the library's own bridge); a path is a file URL.
	private static func url(_ text: String) throws(ToolError) -> Any {
		let url = text.hasPrefix("/") ? URL(filePath: text) : URL(string: text)
		guard let url, url.scheme != nil, let stored = Defaults.AnySerializable(url).propertyListValue else {
			throw .badValue(
				"\"\(text)\" is not a URL: give one with a scheme (https://example.com, file:///tmp/x) or a path.")
		}
		return stored
	}

	/// JSON text as a `Codable` key stores it: the text itself, once it is known to be JSON.
	private static func json(_ text: String) throws(ToolError) -> Any {
		do {
			_ = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
		} catch {
			throw .badValue(
				"\"\(text)\" is not JSON (a Codable value is stored as its JSON text: '{\"width\":640}', '\"text\"').")
		}
		return text
	}

	/// A date in one of the forms people type; a date without a zone is in UTC.
	static func parseDate(_ text: String) -> Date? {
		let trimmed = text.trimmingCharacters(in: .whitespaces)
		let iso = ISO8601DateFormatter()
		iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
		if let date = iso.date(from: trimmed) {
			return date
		}
		iso.formatOptions = [.withInternetDateTime]
		if let date = iso.date(from: trimmed) {
			return date
		}
		let formatter = DateFormatter()
		formatter.locale = Locale(identifier: "en_US_POSIX")
		formatter.timeZone = TimeZone(identifier: "UTC")
		for format in ["yyyy-MM-dd HH:mm:ss Z", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd"] {
			formatter.dateFormat = format
			if let date = formatter.date(from: trimmed) {
				return date
			}
		}
		return nil
	}

	/// Bytes from hexadecimal digits; spaces, a `0x` prefix and surrounding `<` `>` are allowed.
	static func parseHex(_ text: String) -> Data? {
		var digits = Substring(text.filter { !$0.isWhitespace })
		if digits.hasPrefix("<"), digits.hasSuffix(">"), digits.count >= 2 {
			digits = digits.dropFirst().dropLast()
		}
		if digits.hasPrefix("0x") || digits.hasPrefix("0X") {
			digits = digits.dropFirst(2)
		}
		guard digits.count % 2 == 0, digits.allSatisfy(\.isHexDigit) else {
			return nil
		}
		var bytes: [UInt8] = []
		bytes.reserveCapacity(digits.count / 2)
		var index = digits.startIndex
		while index < digits.endIndex {
			let next = digits.index(index, offsetBy: 2)
			guard let byte = UInt8(digits[index..<next], radix: 16) else {
				return nil
			}
			bytes.append(byte)
			index = next
		}
		return Data(bytes)
	}
}
