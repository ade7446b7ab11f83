import Defaults
import Foundation

/// Writes normalised property-list values as an XML property list for `export`, in Foundation's layout (keys sorted,
/// one tab a level), with the package's own text for each value.
///
/// Not `PropertyListSerialization`: on Linux it writes a date before year 1 or after 9999 as garbage (years past
/// 2^31, the wrong day) and drops the sign of -0.0 and control characters. Dates here are the printer's
/// (`Defaults.PropertyList.Printer.iso8601Date`), the same calendar date `read` prints; a date outside years 0-9999
/// is written as an ISO 8601 expanded year (`+10000-01-01T00:00:00Z`), which Foundation's XML reader refuses, so an
/// import of such a file fails with nothing changed instead of taking in a wrong date.
enum XMLFormat {
	static func document(_ values: [String: Any]) -> Data {
		var text = """
			<?xml version="1.0" encoding="UTF-8"?>
			<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
			<plist version="1.0">

			"""
		append(values, level: 0, to: &text)
		text += "</plist>\n"
		return Data(text.utf8)
	}

	private static func append(_ value: Any, level: Int, to text: inout String) {
		let indent = String(repeating: "\t", count: level)
		switch value {
		case let dictionary as [String: Any]:
			guard !dictionary.isEmpty else {
				text += indent + "<dict/>\n"
				return
			}
			text += indent + "<dict>\n"
			for key in dictionary.keys.sorted() {
				text += indent + "\t<key>" + escaped(key) + "</key>\n"
				append(dictionary[key]!, level: level + 1, to: &text)
			}
			text += indent + "</dict>\n"
		case let array as [Any]:
			guard !array.isEmpty else {
				text += indent + "<array/>\n"
				return
			}
			text += indent + "<array>\n"
			for element in array {
				append(element, level: level + 1, to: &text)
			}
			text += indent + "</array>\n"
		default:
			text += indent + scalar(value) + "\n"
		}
	}

	private static func scalar(_ value: Any) -> String {
		switch value {
		case let value as Bool: value ? "<true/>" : "<false/>"
		case let value as Int: "<integer>\(value)</integer>"
		case let value as UInt64: "<integer>\(value)</integer>"
		case let value as Double: "<real>\(real(value))</real>"
		case let value as String: "<string>\(escaped(value))</string>"
		case let value as Date: "<date>\(Defaults.PropertyList.Printer.iso8601Date(value))</date>"
		case let value as Data: "<data>\(value.base64EncodedString())</data>"
		default: "<string>\(escaped("\(value)"))</string>"
		}
	}

	private static func real(_ value: Double) -> String {
		if value.isNaN {
			return "nan"
		}
		if value.isInfinite {
			return value > 0 ? "+infinity" : "-infinity"
		}
		return "\(value)"
	}

	/// `text` with markup characters escaped, and control characters (but tab and line feed) as character references:
	/// a parser would turn a raw carriage return into a line feed.
	private static func escaped(_ text: String) -> String {
		var result = ""
		for scalar in text.unicodeScalars {
			switch scalar {
			case "&": result += "&amp;"
			case "<": result += "&lt;"
			case ">": result += "&gt;"
			case "\t", "\n": result.unicodeScalars.append(scalar)
			case _ where scalar.value < 0x20: result += "&#\(scalar.value);"
			default: result.unicodeScalars.append(scalar)
			}
		}
		return result
	}
}
