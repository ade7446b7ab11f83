import Defaults
import Foundation

/// Prints normalised property-list values as macOS `defaults read` does, with the package's one printer in its
/// OpenStep notation: dictionaries in braces, arrays in parentheses, booleans as 1 and 0, and strings quoted when
/// they need it.
enum TextFormat {
	/// The value as `read <domain> <key>` prints it: a string or a date as it is, anything else in its text form.
	static func topLevel(_ value: Any) -> String {
		switch value {
		case let string as String: string
		case let date as Date: Defaults.PropertyList.Printer.openStepDate(date)
		default: describe(value)
		}
	}

	/// The value in multi-line text form, nested containers indented by four spaces a level.
	static func describe(_ value: Any) -> String {
		Defaults.PropertyList.Printer(.openStep, indent: 4).text(of: value)
	}

	/// The value on one line: `{ a = 1; b = (x, y); }`; a string alone is quoted only when it is not a plain word.
	static func compact(_ value: Any) -> String {
		Defaults.PropertyList.Printer(.openStep).text(of: value)
	}
}
