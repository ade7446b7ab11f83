import Foundation

/// A ```swift block of a documentation page, and how it is turned into code that the compiler checks.
///
/// The convention for the pages (README.md, Docs/*.md, the DocC catalog): every ```swift block compiles as it is,
/// with the blocks before it on the same page in scope, unless the line right before its opening fence is
/// `<!-- fragment -->`, which marks a block that is an excerpt on purpose (elided bodies, a line shown out of
/// context). Markdown and DocC render the marker as nothing.
///
/// Each page becomes one Swift file: its imports at the top, its declarations (types, extensions, and the globals
/// they use) at file scope and `fileprivate`, so that two pages can each declare a `Theme`; and the statements of each
/// block in a function of their own, `async throws`, so that a block may `await` and `try` and its locals meet no
/// other block's.
struct DocumentationSample {
	/// The line that marks the block after it as a fragment that is not compiled.
	static let fragmentMarker = "<!-- fragment -->"

	let page: URL
	/// The line of the opening fence, 1-based.
	let line: Int
	let code: String

	/// The ```swift blocks of a Markdown page that are not marked as fragments.
	static func samples(in page: URL) throws -> [DocumentationSample] {
		let lines = try String(contentsOf: page, encoding: .utf8).components(separatedBy: "\n")
		var samples: [DocumentationSample] = []
		var index = 0
		while index < lines.count {
			let fence = lines[index].trimmingCharacters(in: .whitespaces)
			guard fence == "```swift" else {
				index += 1
				continue
			}
			let isFragment =
				index > 0 && lines[index - 1].trimmingCharacters(in: .whitespaces) == fragmentMarker
			let start = index + 1
			var end = start
			while end < lines.count, lines[end].trimmingCharacters(in: .whitespaces) != "```" {
				end += 1
			}
			if !isFragment {
				samples.append(
					DocumentationSample(
						page: page, line: index + 1, code: lines[start..<min(end, lines.count)].joined(separator: "\n"))
				)
			}
			index = end + 1
		}
		return samples
	}

	/// The Swift files that check a page's samples: one per block, each with the block's statements in a function of
	/// its own and, at file scope, the declarations of the blocks before it on the page (the latest of each name) and
	/// its own.
	static func swiftFiles(for samples: [DocumentationSample], pageNumber: Int) -> [String] {
		let blocks = samples.map { ($0, TopLevelItem.items(of: $0.code)) }
		let declarationText = blocks.flatMap(\.1).filter { $0.kind == .declaration }.map(\.text).joined(separator: "\n")
		var imports: Set<String> = []
		var earlier: [(origin: String, item: TopLevelItem)] = []
		var files: [String] = []
		for (blockNumber, (sample, items)) in blocks.enumerated() {
			let origin = "// \(sample.page.lastPathComponent):\(sample.line)"
			var declarations: [(origin: String, item: TopLevelItem)] = []
			var statements: [String] = []
			for item in items {
				switch item.kind {
				case .import:
					imports.insert(item.text.trimmingCharacters(in: .whitespaces))
				case .declaration:
					declarations.append((origin, item))
				case .statement where item.isGlobalUsed(by: declarationText):
					declarations.append((origin, item))
				case .statement:
					statements.append(item.text)
				}
			}
			earlier += declarations
			// The latest declaration of each name wins, as when a page shows a type again in a later form.
			var taken: Set<String> = []
			var inScope: [(origin: String, item: TopLevelItem)] = []
			for entry in earlier.reversed() {
				let names = entry.item.declaredNames
				if names.isDisjoint(with: taken) {
					inScope.insert(entry, at: 0)
				}
				taken.formUnion(names)
			}
			let body = statements.joined(separator: "\n")
			let function = "\(origin)\nprivate func sample\(pageNumber)_\(blockNumber)() async throws {\n\(body)\n}"
			let parts = imports.sorted() + inScope.map { "\($0.origin)\n\($0.item.fileprivateText)" } + [function]
			files.append(parts.joined(separator: "\n\n") + "\n")
		}
		return files
	}
}

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
		var isAttributeOnly = false
		for line in code.components(separatedBy: "\n") {
			if current.isEmpty && line.trimmingCharacters(in: .whitespaces).isEmpty {
				continue
			}
			current.append(line)
			depth += bracketBalance(of: line)
			isAttributeOnly = line.trimmingCharacters(in: .whitespaces).hasPrefix("@") && !line.contains(" ")
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
