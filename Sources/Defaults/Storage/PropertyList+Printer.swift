import Foundation

extension Defaults.PropertyList {
	/// How the ``Printer`` spells values. Each notation has a reader, and they differ only where that reader needs it.
	package enum Notation: Sendable {
		/// Like Swift literals, for messages about a value: `["a": [1, "x"]]`, data as `5 bytes`.
		case swift
		/// Every value with its property-list type, for telling stored forms apart: `{a: [integer 1, string "x"]}`.
		/// Text longer than 200 characters is cut.
		case typed
		/// Every value tagged with its type and spelled exactly, so that the text is the same exactly for equal
		/// values: `d:{"a":a:[i:1,s:"x"]}`. The set bridges order elements by it, so it is part of stored forms and
		/// must never change.
		case tagged
		/// The OpenStep text form that macOS `defaults read` prints: `{ a = (1, x); }`, booleans as 1 and 0, dates
		/// as `"2024-05-01 12:00:00 +0000"`, data as `<0badcafe 00>`, strings quoted when they are not plain words.
		case openStep
		/// JSON with sorted keys: reals always with a decimal point or an exponent, dates as ISO 8601 text with
		/// milliseconds, data as Base64 text; what JSON cannot hold (infinities, NaN) as `null`.
		case json
	}

	/// The one printer of normalised property-list values: messages, snapshot differences, the set bridges' order
	/// and the `defaults` command's output are all this walk over a value, in different ``Notation``s.
	///
	/// It is safe for any value a file can hold: Foundation traps when it formats a date whose time interval is NaN,
	/// so such a date is printed as `an invalid date (nan seconds)` in every notation but ``Notation/tagged``. Dates
	/// are put on the calendar by the printer's own arithmetic (`CalendarTime`), the same in every notation; one more
	/// than a million years away is printed as `a date out of range (… seconds from 2001-01-01)`.
	package struct Printer: Sendable {
		package var notation: Notation
		/// Spaces each level of nesting is indented by, with one element a line; `nil` prints the value on one line.
		package var indent: Int?
		/// The length beyond which the text is cut and ends with `…`; `nil` never cuts.
		package var limit: Int?
		/// A text for data that the notation cannot read into, such as a keyed archive's class; `nil` from it (or no
		/// closure) prints the notation's own text.
		package var dataText: (@Sendable (Data) -> String?)?

		package init(
			_ notation: Notation, indent: Int? = nil, limit: Int? = nil, dataText: (@Sendable (Data) -> String?)? = nil
		) {
			self.notation = notation
			self.indent = indent
			self.limit = limit
			self.dataText = dataText
		}

		/// `value` in the printer's notation.
		package func text(of value: Any) -> String {
			var text = ""
			append(value, to: &text, level: 0)
			guard let limit, text.count > limit else {
				return text
			}
			return text.prefix(limit) + "…"
		}

		private func isFull(_ text: String) -> Bool {
			limit.map { text.count > $0 } ?? false
		}

		private func append(_ value: Any, to text: inout String, level: Int) {
			guard !isFull(text) else {
				return
			}
			switch value {
			case let array as [Any]:
				appendContainer(array.count, syntax: arraySyntax, to: &text, level: level) { index, text in
					append(array[index], to: &text, level: level + 1)
				}
			case let dictionary as [String: Any]:
				let keys = dictionary.keys.sorted()
				appendContainer(keys.count, syntax: dictionarySyntax, to: &text, level: level) { index, text in
					text += key(keys[index])
					append(dictionary[keys[index]]!, to: &text, level: level + 1)
				}
			default:
				text += scalar(value)
			}
		}

		/// How a container's elements are set off: `(a, b)`, `{ a = 1; }`.
		private struct Syntax {
			var open: String
			var close: String
			var separator: String
			var terminator = ""
			/// What comes before each element and before the close on one line (one a line: a line break).
			var inlineLead = ""
			/// An empty container's text, when it is not `open` and `close` together.
			var empty: String?
			/// An empty container still breaks its line when printed one element a line.
			var breaksWhenEmpty = false
		}

		private func appendContainer(
			_ count: Int, syntax: Syntax, to text: inout String, level: Int, element: (Int, inout String) -> Void
		) {
			if count == 0, let empty = syntax.empty {
				text += empty
				return
			}
			text += syntax.open
			for index in 0..<count {
				if index > 0 {
					text += syntax.separator
				}
				appendLead(syntax, level: level + 1, to: &text)
				element(index, &text)
				text += syntax.terminator
				if isFull(text) {
					break
				}
			}
			if count > 0 || syntax.breaksWhenEmpty {
				appendLead(syntax, level: level, to: &text)
			}
			text += syntax.close
		}

		private func appendLead(_ syntax: Syntax, level: Int, to text: inout String) {
			if let indent {
				text += "\n"
				text += String(repeating: " ", count: indent * level)
			} else {
				text += syntax.inlineLead
			}
		}

		private var arraySyntax: Syntax {
			switch notation {
			case .swift, .typed: Syntax(open: "[", close: "]", separator: ", ")
			case .tagged: Syntax(open: "a:[", close: "]", separator: ",")
			case .openStep: Syntax(open: "(", close: ")", separator: indent == nil ? ", " : ",", breaksWhenEmpty: true)
			case .json: Syntax(open: "[", close: "]", separator: ",")
			}
		}

		private var dictionarySyntax: Syntax {
			switch notation {
			case .swift: Syntax(open: "[", close: "]", separator: ", ", empty: "[:]")
			case .typed: Syntax(open: "{", close: "}", separator: ", ")
			case .tagged: Syntax(open: "d:{", close: "}", separator: ",")
			case .openStep:
				Syntax(open: "{", close: "}", separator: "", terminator: ";", inlineLead: " ", breaksWhenEmpty: true)
			case .json: Syntax(open: "{", close: "}", separator: ",")
			}
		}

		/// A dictionary key and what separates it from its value.
		private func key(_ key: String) -> String {
			switch notation {
			case .swift: key.debugDescription + ": "
			case .typed: key + ": "
			case .tagged: key.debugDescription + ":"
			case .openStep: Self.openStepString(key) + " = "
			case .json: Self.quoted(key, numericEscape: "\\u") + (indent == nil ? ":" : ": ")
			}
		}

		private func scalar(_ value: Any) -> String {
			switch value {
			case let value as Bool:
				switch notation {
				case .swift, .json: "\(value)"
				case .typed: "boolean \(value)"
				case .tagged: "b:\(value)"
				case .openStep: value ? "1" : "0"
				}
			case let value as Int: integer("\(value)")
			case let value as UInt64: integer("\(value)")
			case let value as Double:
				switch notation {
				case .swift, .openStep: "\(value)"
				case .typed: "real \(value)"
				case .tagged: "r:\(value)"
				case .json: value.isFinite ? "\(value)" : "null"
				}
			case let value as String: string(value)
			case let value as Date: date(value)
			case let value as Data: data(value)
			default:
				switch notation {
				case .swift: "\(value)"
				case .typed: "\(type(of: value)) \(value)"
				case .tagged: "?:\(value)"
				case .openStep: Self.quoted("\(value)")
				case .json: "null"
				}
			}
		}

		private func integer(_ digits: String) -> String {
			switch notation {
			case .swift, .openStep, .json: digits
			case .typed: "integer \(digits)"
			case .tagged: "i:\(digits)"
			}
		}

		private func string(_ value: String) -> String {
			switch notation {
			case .swift: value.debugDescription
			case .typed: "string " + (value.count > 200 ? String(value.prefix(200)) + "…" : value).debugDescription
			case .tagged: "s:" + value.debugDescription
			case .openStep: Self.openStepString(value)
			case .json: Self.quoted(value, numericEscape: "\\u")
			}
		}

		private func date(_ value: Date) -> String {
			let seconds = value.timeIntervalSinceReferenceDate
			if notation == .tagged {
				return "t:\(seconds)"
			}
			guard let time = CalendarTime(seconds) else {
				let text = Self.dateText(seconds)
				switch notation {
				case .swift, .tagged: return text
				case .typed: return "date " + text
				case .openStep: return Self.quoted(text)
				case .json: return Self.quoted(text, numericEscape: "\\u")
				}
			}
			switch notation {
			case .swift, .tagged: return time.iso8601()
			case .typed: return "date " + time.iso8601()
			case .openStep: return Self.quoted(time.openStep)
			case .json: return Self.quoted(time.iso8601(milliseconds: true), numericEscape: "\\u")
			}
		}

		private func data(_ value: Data) -> String {
			if let text = dataText?(value) {
				return text
			}
			switch notation {
			case .swift:
				return "\(value)"
			case .typed:
				let hex = value.prefix(16).map { String(format: "%02x", $0) }.joined()
				return "data (\(value.count) bytes: \(hex)\(value.count > 16 ? "…" : ""))"
			case .tagged:
				return "d:" + value.base64EncodedString()
			case .openStep:
				// Bytes in groups of four: `<0badcafe 00>`.
				var text = "<"
				for (index, byte) in value.enumerated() {
					text += (index > 0 && index % 4 == 0 ? " " : "") + String(format: "%02x", byte)
				}
				return text + ">"
			case .json:
				return Self.quoted(value.base64EncodedString(), numericEscape: "\\u")
			}
		}

		/// A date as macOS `defaults` prints it, without quotes: `2024-05-01 12:00:00 +0000`.
		package static func openStepDate(_ date: Date) -> String {
			let seconds = date.timeIntervalSinceReferenceDate
			return CalendarTime(seconds)?.openStep ?? dateText(seconds)
		}

		/// A date in ISO 8601 with whole seconds, as XML property lists hold it: `2024-05-01T12:00:00Z`.
		package static func iso8601Date(_ date: Date) -> String {
			let seconds = date.timeIntervalSinceReferenceDate
			return CalendarTime(seconds)?.iso8601() ?? dateText(seconds)
		}

		/// The text of a date that is not on the calendar: NaN, or farther than a million years away.
		private static func dateText(_ seconds: Double) -> String {
			seconds.isNaN
				? "an invalid date (\(seconds) seconds)"
				: "a date out of range (\(seconds) seconds from 2001-01-01)"
		}

		/// `string` as it is if it is a plain word, else quoted with escapes.
		private static func openStepString(_ string: String) -> String {
			let isPlain =
				!string.isEmpty
				&& string.unicodeScalars.allSatisfy { scalar in
					scalar.isASCII
						&& (CharacterSet.alphanumerics.contains(scalar) || "_$.".unicodeScalars.contains(scalar))
				}
			return isPlain ? string : quoted(string)
		}

		/// `string` in double quotes, with quotes, backslashes and control characters escaped.
		///
		/// OpenStep text and JSON escape alike but for the prefix of a numeric escape: `\U` in the one, `\u` in the
		/// other.
		private static func quoted(_ string: String, numericEscape: String = "\\U") -> String {
			var text = "\""
			for scalar in string.unicodeScalars {
				switch scalar {
				case "\"": text += "\\\""
				case "\\": text += "\\\\"
				case "\n": text += "\\n"
				case "\t": text += "\\t"
				case "\r": text += "\\r"
				case _ where scalar.value < 0x20:
					text += numericEscape + String(format: "%04x", scalar.value)
				default: text.unicodeScalars.append(scalar)
				}
			}
			return text + "\""
		}
	}
}
