import Foundation

/// Reads property lists in the OpenStep text format (`{ key = value; list = (a, b); data = <0fbd>; }`).
///
/// Foundation's parser for this format prints CoreFoundation log lines to standard error when a file is malformed
/// and has no limit on nesting; this one is quiet, says where a file goes wrong, and stops at
/// ``Defaults/PropertyList/maximumDepth``. Values come out normalised: `String`, `Data`, `[Any]` and
/// `[String: Any]` (the format has no other types).
enum OpenStepPropertyList {
	struct Error: Swift.Error, CustomStringConvertible {
		let description: String
	}

	/// Whether `data` starts (after a byte-order mark and white space) like XML: a tag that is not OpenStep data.
	static func looksLikeXML(_ data: Data) -> Bool {
		guard let text = text(of: data) else {
			return false
		}
		let start = text.drop(while: { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D })
		guard start.first == UInt8(ascii: "<") else {
			return false
		}
		// `<0fbd 77>` is OpenStep data; any other tag (`<?xml`, `<plist>`, `<integer>`) is XML.
		let tag = start.dropFirst().prefix { $0 != UInt8(ascii: ">") }
		return !tag.allSatisfy { Parser.hexValue($0) != nil || $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
	}

	/// The top-level value of `data`. A file that is only `key = value;` pairs, without braces, is a dictionary.
	static func parse(_ data: Data) throws(Error) -> Any {
		guard let bytes = text(of: data) else {
			throw Error(description: "the text is neither UTF-8 nor UTF-16 with a byte-order mark")
		}
		var parser = Parser(bytes: bytes)
		parser.skipSpace()
		guard !parser.isAtEnd else {
			throw Error(description: "the file holds no value")
		}
		let start = parser.position
		if parser.peek != UInt8(ascii: "{"), parser.peek != UInt8(ascii: "("), parser.peek != UInt8(ascii: "<") {
			// A strings file: `key = value;` pairs with no braces around them.
			_ = try parser.string()
			parser.skipSpace()
			if parser.peek == UInt8(ascii: "=") {
				parser.position = start
				return try parser.dictionaryBody(depth: 1, closing: nil)
			}
			parser.position = start
		}
		let value = try parser.value(depth: 1)
		parser.skipSpace()
		guard parser.isAtEnd else {
			throw parser.error("unexpected text after the top-level value")
		}
		return value
	}

	/// UTF-8 bytes of the text in `data`, decoding UTF-16 when it starts with a byte-order mark.
	private static func text(of data: Data) -> [UInt8]? {
		let bytes = [UInt8](data)
		if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
			return Array(bytes.dropFirst(3))
		}
		if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
			guard let string = String(data: data, encoding: .utf16) else {
				return nil
			}
			return Array(string.utf8)
		}
		return bytes
	}

	private struct Parser {
		let bytes: [UInt8]
		var position = 0

		init(bytes: [UInt8]) {
			self.bytes = bytes
		}

		var isAtEnd: Bool { position >= bytes.count }
		var peek: UInt8? { isAtEnd ? nil : bytes[position] }

		func error(_ message: String) -> Error {
			let line = bytes[..<min(position, bytes.count)].reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
			return Error(description: "\(message) on line \(line)")
		}

		/// Skips white space and `//` and `/* */` comments.
		mutating func skipSpace() {
			while let byte = peek {
				if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == 0x0C || byte == 0x0B {
					position += 1
				} else if byte == UInt8(ascii: "/"), position + 1 < bytes.count,
					bytes[position + 1] == UInt8(ascii: "/")
				{
					while let next = peek, next != 0x0A { position += 1 }
				} else if byte == UInt8(ascii: "/"), position + 1 < bytes.count,
					bytes[position + 1] == UInt8(ascii: "*")
				{
					position += 2
					while position + 1 < bytes.count,
						!(bytes[position] == UInt8(ascii: "*") && bytes[position + 1] == UInt8(ascii: "/"))
					{
						position += 1
					}
					position = min(position + 2, bytes.count)
				} else {
					return
				}
			}
		}

		mutating func value(depth: Int) throws(Error) -> Any {
			skipSpace()
			guard let byte = peek else {
				throw error("the text ends where a value belongs")
			}
			switch byte {
			case UInt8(ascii: "{"):
				try checkDepth(depth)
				position += 1
				return try dictionaryBody(depth: depth, closing: UInt8(ascii: "}"))
			case UInt8(ascii: "("):
				try checkDepth(depth)
				position += 1
				return try array(depth: depth)
			case UInt8(ascii: "<"):
				position += 1
				return try data()
			default:
				return try string()
			}
		}

		func checkDepth(_ depth: Int) throws(Error) {
			guard depth <= Defaults.PropertyList.maximumDepth + 1 else {
				throw error("values are nested more than \(Defaults.PropertyList.maximumDepth) deep")
			}
		}

		/// `key = value;` pairs up to `closing` (or the end of the text when `closing` is `nil`).
		mutating func dictionaryBody(depth: Int, closing: UInt8?) throws(Error) -> [String: Any] {
			var dictionary: [String: Any] = [:]
			while true {
				skipSpace()
				if let closing, peek == closing {
					position += 1
					return dictionary
				}
				if closing == nil, isAtEnd {
					return dictionary
				}
				guard !isAtEnd else {
					throw error("a dictionary is not closed")
				}
				let key = try string()
				skipSpace()
				guard peek == UInt8(ascii: "=") else {
					throw error("expected '=' after the key \"\(key)\"")
				}
				position += 1
				let element = try value(depth: depth + 1)
				skipSpace()
				guard peek == UInt8(ascii: ";") else {
					throw error("expected ';' after the value of \"\(key)\"")
				}
				position += 1
				dictionary[key] = element
			}
		}

		mutating func array(depth: Int) throws(Error) -> [Any] {
			var array: [Any] = []
			while true {
				skipSpace()
				if peek == UInt8(ascii: ")") {
					position += 1
					return array
				}
				array.append(try value(depth: depth + 1))
				skipSpace()
				if peek == UInt8(ascii: ",") {
					position += 1
				} else if peek != UInt8(ascii: ")") {
					throw error(isAtEnd ? "an array is not closed" : "expected ',' or ')' in an array")
				}
			}
		}

		/// `<0fbd 77>`: hex digits, white space between them allowed.
		mutating func data() throws(Error) -> Data {
			var result = Data()
			var high: UInt8?
			while true {
				skipSpace()
				guard let byte = peek else {
					throw error("a data value is not closed")
				}
				position += 1
				if byte == UInt8(ascii: ">") {
					guard high == nil else {
						throw error("a data value has an odd number of hex digits")
					}
					return result
				}
				guard let nibble = Self.hexValue(byte) else {
					throw error("a data value holds a character that is not a hex digit")
				}
				if let first = high {
					result.append(first << 4 | nibble)
					high = nil
				} else {
					high = nibble
				}
			}
		}

		static func hexValue(_ byte: UInt8) -> UInt8? {
			switch byte {
			case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
			case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
			case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
			default: nil
			}
		}

		static func isUnquotedCharacter(_ byte: UInt8) -> Bool {
			switch byte {
			case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
				UInt8(ascii: "0")...UInt8(ascii: "9"):
				true
			case UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "."),
				UInt8(ascii: "-"), UInt8(ascii: "+"):
				true
			default: false
			}
		}

		/// A quoted string (`"…"` or `'…'`, with backslash escapes) or an unquoted word.
		mutating func string() throws(Error) -> String {
			guard let byte = peek else {
				throw error("the text ends where a string belongs")
			}
			if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
				position += 1
				return try quoted(until: byte)
			}
			let start = position
			while let next = peek, Self.isUnquotedCharacter(next) { position += 1 }
			guard position > start else {
				throw error("unexpected character '\(Unicode.Scalar(byte).escaped(asASCII: true))'")
			}
			return String(decoding: bytes[start..<position], as: UTF8.self)
		}

		private mutating func quoted(until quote: UInt8) throws(Error) -> String {
			var scalars = String.UnicodeScalarView()
			var pending: [UInt8] = []
			func flush() throws(Error) {
				guard !pending.isEmpty else { return }
				guard let text = String(validating: pending, as: UTF8.self) else {
					throw Error(description: "a string is not valid UTF-8")
				}
				scalars.append(contentsOf: text.unicodeScalars)
				pending.removeAll(keepingCapacity: true)
			}
			while true {
				guard let byte = peek else {
					throw error("a quoted string is not closed")
				}
				position += 1
				if byte == quote {
					try flush()
					return String(scalars)
				}
				guard byte == UInt8(ascii: "\\") else {
					pending.append(byte)
					continue
				}
				try flush()
				scalars.append(try escape())
			}
		}

		private mutating func hexUnit() throws(Error) -> UInt16 {
			var value: UInt16 = 0
			for _ in 0..<4 {
				guard let next = peek, let digit = Self.hexValue(next) else {
					throw error("a \\U escape needs four hex digits")
				}
				value = value * 16 + UInt16(digit)
				position += 1
			}
			return value
		}

		private mutating func escape() throws(Error) -> Unicode.Scalar {
			guard let byte = peek else {
				throw error("a quoted string ends in a backslash")
			}
			position += 1
			switch byte {
			case UInt8(ascii: "a"): return "\u{07}"
			case UInt8(ascii: "b"): return "\u{08}"
			case UInt8(ascii: "f"): return "\u{0C}"
			case UInt8(ascii: "n"): return "\n"
			case UInt8(ascii: "r"): return "\r"
			case UInt8(ascii: "t"): return "\t"
			case UInt8(ascii: "v"): return "\u{0B}"
			case UInt8(ascii: "0")...UInt8(ascii: "7"):
				var value = UInt32(byte - UInt8(ascii: "0"))
				for _ in 0..<2 {
					guard let next = peek, next >= UInt8(ascii: "0"), next <= UInt8(ascii: "7") else { break }
					value = value * 8 + UInt32(next - UInt8(ascii: "0"))
					position += 1
				}
				return Unicode.Scalar(UInt8(truncatingIfNeeded: value))
			case UInt8(ascii: "U"), UInt8(ascii: "u"):
				let unit = try hexUnit()
				if UTF16.isLeadSurrogate(unit), peek == UInt8(ascii: "\\"), position + 1 < bytes.count,
					bytes[position + 1] == UInt8(ascii: "U") || bytes[position + 1] == UInt8(ascii: "u")
				{
					position += 2
					let trail = try hexUnit()
					if UTF16.isTrailSurrogate(trail),
						let scalar = Unicode.Scalar(0x10000 + (UInt32(unit) - 0xD800) << 10 + (UInt32(trail) - 0xDC00))
					{
						return scalar
					}
				}
				// A lone surrogate has no Unicode scalar: refused rather than turned into U+FFFD, so that a rewrite of
				// the file never changes what it held.
				guard let scalar = Unicode.Scalar(unit) else {
					throw error("a \\U escape names a lone UTF-16 surrogate")
				}
				return scalar
			default:
				return Unicode.Scalar(byte)
			}
		}
	}
}
