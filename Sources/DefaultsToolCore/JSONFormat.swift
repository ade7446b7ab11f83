import Foundation

/// Prints normalised property-list values as JSON for `--json`.
///
/// Written by hand rather than with `JSONSerialization`, so that the output is the same everywhere: keys sorted,
/// reals always with a decimal point or an exponent (`1.0`, not `1`) so that their type survives, dates as ISO 8601
/// text with fractional seconds, data as Base64 text.
enum JSONFormat {
	/// `value` as JSON, indented by two spaces a level, or on one line when `pretty` is `false`.
	static func encode(_ value: Any, pretty: Bool = true) -> String {
		var text = ""
		write(value, into: &text, indent: pretty ? 0 : nil)
		return text
	}

	private static func write(_ value: Any, into text: inout String, indent: Int?) {
		switch value {
		case let dictionary as [String: Any]:
			let keys = dictionary.keys.sorted()
			writeContainer(open: "{", close: "}", count: keys.count, into: &text, indent: indent) { index, text in
				text += string(keys[index]) + (indent == nil ? ":" : ": ")
				write(dictionary[keys[index]]!, into: &text, indent: indent.map { $0 + 2 })
			}
		case let array as [Any]:
			writeContainer(open: "[", close: "]", count: array.count, into: &text, indent: indent) { index, text in
				write(array[index], into: &text, indent: indent.map { $0 + 2 })
			}
		case let bool as Bool: text += bool ? "true" : "false"
		case let integer as Int: text += String(integer)
		case let integer as UInt64: text += String(integer)
		// JSON has no infinities or NaN.
		case let real as Double: text += real.isFinite ? String(real) : "null"
		case let string as String: text += self.string(string)
		case let date as Date: text += self.string(isoText(date))
		case let data as Data: text += self.string(data.base64EncodedString())
		default: text += "null"
		}
	}

	private static func writeContainer(
		open: String, close: String, count: Int, into text: inout String, indent: Int?,
		element: (Int, inout String) -> Void
	) {
		text += open
		guard count > 0 else {
			text += close
			return
		}
		for index in 0..<count {
			if index > 0 {
				text += ","
			}
			if let indent {
				text += "\n" + String(repeating: " ", count: indent + 2)
			}
			element(index, &text)
		}
		if let indent {
			text += "\n" + String(repeating: " ", count: indent)
		}
		text += close
	}

	/// A date in ISO 8601 with milliseconds, in UTC: `2024-05-01T12:00:00.250Z`.
	static func isoText(_ date: Date) -> String {
		date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
	}

	/// `value` as a JSON string literal.
	static func string(_ value: String) -> String {
		TextFormat.quoted(value, numericEscape: "\\u")
	}
}
