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
