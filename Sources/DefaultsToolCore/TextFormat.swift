import Foundation

/// Prints normalised property-list values as macOS `defaults read` does: the old OpenStep text form, with
/// dictionaries in braces, arrays in parentheses, booleans as 1 and 0, and strings quoted when they need it.
enum TextFormat {
	/// The value as `read <domain> <key>` prints it: a string or a date as it is, anything else in its text form.
	static func topLevel(_ value: Any) -> String {
		switch value {
		case let string as String: string
		case let date as Date: dateText(date)
		default: describe(value)
		}
	}

	/// The value in multi-line text form, nested containers indented by four spaces a level.
	static func describe(_ value: Any, indent: Int = 0) -> String {
		let padding = String(repeating: " ", count: indent)
		let inner = String(repeating: " ", count: indent + 4)
		switch value {
		case let dictionary as [String: Any]:
			var text = "{\n"
			for key in dictionary.keys.sorted() {
				text += inner + quotedIfNeeded(key) + " = " + describe(dictionary[key]!, indent: indent + 4) + ";\n"
			}
			return text + padding + "}"
		case let array as [Any]:
			guard !array.isEmpty else {
				return "(\n" + padding + ")"
			}
			let elements = array.map { inner + describe($0, indent: indent + 4) }
			return "(\n" + elements.joined(separator: ",\n") + "\n" + padding + ")"
		default:
			return scalar(value)
		}
	}

	/// The value on one line: `{ a = 1; b = (x, y); }`.
	static func compact(_ value: Any) -> String {
		switch value {
		case let dictionary as [String: Any]:
			guard !dictionary.isEmpty else {
				return "{ }"
			}
			let entries = dictionary.keys.sorted().map { "\(quotedIfNeeded($0)) = \(compact(dictionary[$0]!));" }
			return "{ " + entries.joined(separator: " ") + " }"
		case let array as [Any]:
			return "(" + array.map(compact).joined(separator: ", ") + ")"
		default:
			return scalar(value)
		}
	}

	private static func scalar(_ value: Any) -> String {
		switch value {
		case let bool as Bool: return bool ? "1" : "0"
		case let integer as Int: return String(integer)
		case let integer as UInt64: return String(integer)
		case let real as Double: return String(real)
		case let string as String: return quotedIfNeeded(string)
		case let date as Date: return quoted(dateText(date))
		case let data as Data: return dataText(data)
		default: return quoted("\(value)")
		}
	}

	/// A date as macOS prints it: `2024-05-01 12:00:00 +0000`.
	static func dateText(_ date: Date) -> String {
		let formatter = DateFormatter()
		formatter.locale = Locale(identifier: "en_US_POSIX")
		formatter.timeZone = TimeZone(identifier: "UTC")
		formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
		return formatter.string(from: date) + " +0000"
	}

	/// Data as hexadecimal in angle brackets, bytes in groups of four: `<0badcafe 00>`.
	static func dataText(_ data: Data) -> String {
		var text = "<"
		for (index, byte) in data.enumerated() {
			if index > 0, index % 4 == 0 {
				text += " "
			}
			text += String(byte, radix: 16, uppercase: false).leftPadded(to: 2)
		}
		return text + ">"
	}

	/// `string` as it is if it is a plain word, else quoted with escapes.
	static func quotedIfNeeded(_ string: String) -> String {
		let isPlain =
			!string.isEmpty
			&& string.unicodeScalars.allSatisfy { scalar in
				scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "_$.".unicodeScalars.contains(scalar))
			}
		return isPlain ? string : quoted(string)
	}

	/// `string` in double quotes, with quotes, backslashes and control characters escaped.
	///
	/// OpenStep text and JSON escape alike but for the prefix of a numeric escape: `\U` in the one, `\u` in the other.
	static func quoted(_ string: String, numericEscape: String = "\\U") -> String {
		var text = "\""
		for scalar in string.unicodeScalars {
			switch scalar {
			case "\"": text += "\\\""
			case "\\": text += "\\\\"
			case "\n": text += "\\n"
			case "\t": text += "\\t"
			case "\r": text += "\\r"
			case _ where scalar.value < 0x20:
				text += numericEscape + String(scalar.value, radix: 16).leftPadded(to: 4)
			default: text.unicodeScalars.append(scalar)
			}
		}
		return text + "\""
	}

	/// The type word macOS `defaults read-type` prints for a value.
	static func typeName(_ value: Any) -> String {
		switch value {
		case is Bool: "boolean"
		case is Int, is UInt64: "integer"
		case is Double: "float"
		case is String: "string"
		case is Date: "date"
		case is Data: "data"
		case is [Any]: "array"
		case is [String: Any]: "dictionary"
		default: "unknown"
		}
	}
}

extension String {
	/// The string with `0`s in front up to `width` characters.
	func leftPadded(to width: Int) -> String {
		count >= width ? self : String(repeating: "0", count: width - count) + self
	}
}
