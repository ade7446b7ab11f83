import Foundation

/// A top-level construct of a sample: an import, a declaration, or a statement, with its continuation lines.
struct TopLevelItem {
	enum Kind { case `import`, declaration, statement }

	let kind: Kind
	let text: String

	private static let declarationKeywords: Set<String> = [
		"struct", "enum", "class", "actor", "protocol", "extension", "typealias", "func", "final",
	]
	private static let modifiers: Set<String> = [
		"private", "fileprivate", "internal", "public", "nonisolated", "nonisolated(unsafe)", "static",
	]

	/// Splits `code` into items: a line at the left margin starts one, which runs until its brackets close.
	static func items(of code: String) -> [TopLevelItem] {
		var items: [TopLevelItem] = []
		var current: [String] = []
		var depth = 0
		for line in code.components(separatedBy: "\n") {
			if current.isEmpty && line.trimmingCharacters(in: .whitespaces).isEmpty {
				continue
			}
			current.append(line)
			depth += bracketBalance(of: line)
			let isAttributeOnly = line.trimmingCharacters(in: .whitespaces).hasPrefix("@") && !line.contains(" ")
			if depth <= 0 && !isAttributeOnly && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
				items.append(item(current.joined(separator: "\n")))
				current = []
				depth = 0
			}
		}
		if !current.isEmpty {
			items.append(item(current.joined(separator: "\n")))
		}
		return items
	}

	private static func item(_ text: String) -> TopLevelItem {
		let words = significantWords(of: text)
		if words.first == "import" {
			return TopLevelItem(kind: .import, text: text)
		}
		let isDeclaration =
			words.contains { declarationKeywords.contains($0) }
			&& words.prefix { $0.hasPrefix("@") || modifiers.contains($0) || declarationKeywords.contains($0) }
				.contains { declarationKeywords.contains($0) }
		let hasModifier = words.first.map { modifiers.contains($0) || $0.hasPrefix("@MainActor") } ?? false
		return TopLevelItem(kind: isDeclaration || hasModifier ? .declaration : .statement, text: text)
	}

	/// The words of the first line that is not a comment, attributes included.
	private static func significantWords(of text: String) -> [String] {
		let lines = text.components(separatedBy: "\n").filter {
			!$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
		}
		return lines.joined(separator: " ").split(whereSeparator: { $0 == " " || $0 == "\t" }).prefix(6).map(
			String.init)
	}

	/// The names the item declares: types, functions and globals, and an extension's members as `Type.member`.
	var declaredNames: Set<String> {
		let pattern = #"\b(let|var|func|enum|struct|class|actor|protocol|typealias)\s+([A-Za-z_][A-Za-z0-9_]*)"#
		guard let expression = try? NSRegularExpression(pattern: pattern) else {
			return []
		}
		let words = Self.significantWords(of: text)
		let extended = words.firstIndex(of: "extension").flatMap { index in
			index + 1 < words.count ? String(words[index + 1].prefix { $0 != ":" && $0 != "{" }) : nil
		}
		let range = NSRange(text.startIndex..., in: text)
		var names: Set<String> = []
		// A type's or function's own name only (its members are its own business); an extension's members.
		let matches = expression.matches(in: text, range: range)
		for match in extended == nil ? Array(matches.prefix(1)) : matches {
			guard let name = Range(match.range(at: 2), in: text).map({ String(text[$0]) }) else {
				continue
			}
			names.insert(extended.map { "\($0).\(name)" } ?? name)
		}
		return names
	}

	/// Whether this statement is a `let` or `var` that a declaration of the page uses: then it is a global.
	func isGlobalUsed(by declarations: String) -> Bool {
		let words = Self.significantWords(of: text)
		guard let keyword = words.firstIndex(where: { $0 == "let" || $0 == "var" }), keyword + 1 < words.count else {
			return false
		}
		let name = String(words[keyword + 1].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
		return !name.isEmpty && declarations.range(of: "\\b\(name)\\b", options: .regularExpression) != nil
	}

	/// The text with `fileprivate` added where it has no access level of its own and may take one.
	var fileprivateText: String {
		// The access level of the declaration itself, not of its members: the words before its body.
		let words = Self.significantWords(of: String(text.prefix { $0 != "{" && $0 != "=" }))
		if words.contains(where: { ["private", "fileprivate", "public", "internal"].contains($0) }) {
			return text
		}
		// An extension that adds a conformance cannot take an access level; its members take the type's.
		if words.contains("extension") {
			let head = text.prefix { $0 != "{" }
			if head.contains(":") {
				return text
			}
		}
		var lines = text.components(separatedBy: "\n")
		guard
			let first = lines.firstIndex(where: { line in
				let trimmed = line.trimmingCharacters(in: .whitespaces)
				return !trimmed.hasPrefix("//") && !(trimmed.hasPrefix("@") && !trimmed.contains(" "))
			})
		else {
			return text
		}
		// After the attributes on the same line (`@Observable final class …`).
		var parts = lines[first].split(separator: " ", omittingEmptySubsequences: false).map(String.init)
		let position = parts.firstIndex { !$0.hasPrefix("@") } ?? 0
		parts.insert("fileprivate", at: position)
		lines[first] = parts.joined(separator: " ")
		return lines.joined(separator: "\n")
	}

	/// Opening minus closing brackets on a line, outside string literals and comments.
	static func bracketBalance(of line: String) -> Int {
		var balance = 0
		var isInString = false
		var previous: Character = " "
		var characters = line.makeIterator()
		while let character = characters.next() {
			defer { previous = character }
			if isInString {
				if character == "\"" && previous != "\\" {
					isInString = false
				}
				continue
			}
			switch character {
			case "\"": isInString = true
			case "/" where previous == "/": return balance
			case "(", "{", "[": balance += 1
			case ")", "}", "]": balance -= 1
			default: break
			}
		}
		return balance
	}
}
