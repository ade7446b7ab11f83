import Foundation
import Testing

/// The layers of Docs/Design.md, checked in the source: a lower layer names nothing that a layer above it declares.
///
/// The forbidden names are derived from the code, so that a new type or function of a higher layer is covered the
/// day it is written, without a list to keep:
/// - every type a higher folder declares at the top level or directly in `Defaults` (a nested type, such as
///   `PropertyList.Error`, is reached through its parent; a type alias, often a standard name such as
///   `Defaults.Range`, counts only as `Defaults.Range`);
/// - every `static func`, `let` and `var` it declares in `Defaults`, written as `Defaults.name`;
/// - every method it adds to `Defaults.Store`, called as `.name(` (such as `commit(`).
///
/// A lower folder may reuse a name it declares itself, or a generic parameter it names (`Key` of a dictionary),
/// since text cannot tell those apart; `Defaults.Name` is always the package's own.
///
/// Keys and Observation sit in one layer: observation's public API takes keys, and keys hand their writes to the
/// hub. What must not happen, observation in the write path, is checked by the write path living in
/// Keys/Store+Commit.swift.
@Suite struct LayeringTests {
	static let sources = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
		.deletingLastPathComponent().deletingLastPathComponent().appending(path: "Sources/Defaults")

	/// Sources/Defaults's folders, lowest layer first; folders in one group may name each other.
	static let layers: [[String]] = [
		["Support"], ["Storage"], ["Serialization"], ["Keys", "Observation"], ["Contracts"], ["Sync"], ["Schema"],
	]
	/// Names a layer owns without declaring them: Foundation's archiver is the serialization layer's tool.
	static let ownedWithoutDeclaring: [String: String] = ["NSKeyedArchiver": "Serialization"]
	/// Methods of `Defaults.Store` that the standard library and Foundation also have: `values.removeValue(forKey:)`
	/// on a dictionary and on a store read the same, and so do `write(` on a store and on a `FileHandle`.
	static let namesSharedWithTheStandardLibrary: Set<String> = ["removeValue", "write"]

	@Test func storageNamesNothingOfTheLayersAboveIt() throws {
		let found = try Self.violations(in: "Storage")
		#expect(found.isEmpty, "\(found.joined(separator: "\n"))")
	}

	@Test func serializationNamesNothingOfKeysOrObservation() throws {
		let found = try Self.violations(in: "Serialization")
		#expect(found.isEmpty, "\(found.joined(separator: "\n"))")
	}

	@Test(arguments: ["Support", "Keys", "Observation", "Contracts", "Sync"])
	func aFolderNamesNothingOfTheLayersAboveIt(_ folder: String) throws {
		let found = try Self.violations(in: folder)
		#expect(found.isEmpty, "\(found.joined(separator: "\n"))")
	}

	/// The derivation itself: if the scanner stopped finding declarations, every check above would pass vacuously.
	@Test func theForbiddenNamesOfStorageIncludeTheHigherLayersDeclarations() throws {
		let forbidden = try Self.forbiddenNames(for: "Storage")
		for type in ["ChangeHub", "KeyReadCache", "StoreRuntime", "Serializable", "Bridge", "Key", "SyncEngine"] {
			#expect(forbidden.types.contains(type), "\(type)")
		}
		#expect(forbidden.staticFunctions.contains("observe"))
		#expect(forbidden.staticProperties.contains("standardStore"))
		#expect(forbidden.storeMethods.contains("commit"))
		#expect(!forbidden.types.contains("FileStore"), "a folder's own types are its to name")
	}

	// MARK: - Derivation

	struct Declarations {
		var types: Set<String> = []
		/// Type aliases: a second spelling of something declared elsewhere, often a standard name (`Defaults.Range`),
		/// so they count only when written as `Defaults.Name`.
		var typeAliases: Set<String> = []
		var genericParameters: Set<String> = []
		var staticFunctions: Set<String> = []
		var staticProperties: Set<String> = []
		var storeMethods: Set<String> = []
		var functions: Set<String> = []
	}

	struct ForbiddenNames {
		var types: Set<String>
		var qualifiedTypes: Set<String>
		var staticFunctions: Set<String>
		var staticProperties: Set<String>
		var storeMethods: Set<String>
	}

	static func folders(above folder: String) -> [String] {
		guard let index = layers.firstIndex(where: { $0.contains(folder) }) else {
			Issue.record("\(folder) is not in LayeringTests.layers: place it in a layer")
			return []
		}
		return layers[(index + 1)...].flatMap { $0 }
	}

	static func folders(atOrBelow folder: String) -> [String] {
		guard let index = layers.firstIndex(where: { $0.contains(folder) }) else {
			return [folder]
		}
		return layers[...index].flatMap { $0 }
	}

	static func forbiddenNames(for folder: String) throws -> ForbiddenNames {
		let own = try declarations(in: folder)
		let above = try folders(above: folder).map { try declarations(in: $0) }
		// `Defaults.name(` may be overloaded across layers; a lower layer may call the overloads it can see.
		let staticsAtOrBelow = try folders(atOrBelow: folder).map { try declarations(in: $0) }.flatMap(
			\.staticFunctions)
		var types = Set(above.flatMap(\.types))
		types.formUnion(ownedWithoutDeclaring.filter { folders(above: folder).contains($0.value) }.keys)
		let aliases = Set(above.flatMap(\.typeAliases))
		return ForbiddenNames(
			types: types.subtracting(own.types).subtracting(own.genericParameters),
			qualifiedTypes: types.union(aliases).subtracting(own.types).subtracting(own.typeAliases),
			staticFunctions: Set(above.flatMap(\.staticFunctions)).subtracting(staticsAtOrBelow),
			staticProperties: Set(above.flatMap(\.staticProperties)).subtracting(own.staticProperties),
			storeMethods: Set(above.flatMap(\.storeMethods)).subtracting(own.functions)
				.subtracting(namesSharedWithTheStandardLibrary))
	}

	static func violations(in folder: String) throws -> [String] {
		let forbidden = try forbiddenNames(for: folder)
		return try code(in: folder).flatMap { file, lines in
			lines.enumerated().flatMap { index, line in
				let tokens = Token.scan(line)
				return tokens.indices.compactMap { i -> String? in
					let token = tokens[i]
					let afterDefaults = i > 0 && token.followsDot && tokens[i - 1].text == "Defaults"
					let named: Bool =
						(forbidden.types.contains(token.text) && !token.followsDot)
						|| (forbidden.qualifiedTypes.contains(token.text) && afterDefaults)
						|| (forbidden.staticFunctions.contains(token.text) && afterDefaults && token.isCalled)
						|| (forbidden.staticProperties.contains(token.text) && afterDefaults && !token.isCalled)
						|| (forbidden.storeMethods.contains(token.text) && token.followsDot && token.isCalled)
					return named ? "\(folder)/\(file):\(index + 1) names \(token.text)" : nil
				}
			}
		}
	}

	static func declarations(in folder: String) throws -> Declarations {
		var found = Declarations()
		for (_, lines) in try code(in: folder) {
			var depth = 0
			var storeExtensionDepth: Int?
			var namespaceDepth: Int?
			for line in lines {
				let tokens = Token.scan(line)
				if line.hasPrefix("extension Defaults.Store") || line.hasPrefix("extension Store") {
					storeExtensionDepth = depth
				}
				if line.hasPrefix("extension Defaults {") || line.hasPrefix("public enum Defaults") {
					namespaceDepth = depth
				}
				let isNamespaceLevel = depth == 0 || (namespaceDepth.map { depth == $0 + 1 } ?? false)
				for (i, token) in tokens.enumerated().dropLast() {
					let next = tokens[i + 1].text
					switch token.text {
					case "class", "struct", "enum", "protocol", "actor":
						if isNamespaceLevel, next.first?.isUppercase == true, next != "Defaults" {
							found.types.insert(next)
						}
					case "typealias":
						if isNamespaceLevel, next.first?.isUppercase == true {
							found.typeAliases.insert(next)
						}
					case "let", "var":
						if isNamespaceLevel, i > 0, tokens[i - 1].text == "static" {
							found.staticProperties.insert(next)
						}
					case "func":
						found.functions.insert(next)
						if isNamespaceLevel, i > 0, tokens[i - 1].text == "static" {
							found.staticFunctions.insert(next)
						}
						if storeExtensionDepth != nil {
							found.storeMethods.insert(next)
						}
					default: break
					}
				}
				found.genericParameters.formUnion(genericParameters(in: line))
				depth += line.count(where: { $0 == "{" }) - line.count(where: { $0 == "}" })
				if let start = storeExtensionDepth, depth <= start, line.contains("}") {
					storeExtensionDepth = nil
				}
				if let start = namespaceDepth, depth <= start, line.contains("}") {
					namespaceDepth = nil
				}
			}
		}
		return found
	}

	/// The capitalised names between angle brackets that stand alone or before a colon: `<Key, Value: Hashable>`.
	static func genericParameters(in line: String) -> Set<String> {
		var names: Set<String> = []
		for segment in line.split(separator: "<").dropFirst() {
			guard let close = segment.firstIndex(of: ">") else {
				continue
			}
			for part in segment[..<close].split(separator: ",") {
				let words = part.split(separator: " ").filter { $0 != "each" }
				guard let first = words.first else {
					continue
				}
				let name = first.hasSuffix(":") ? first.dropLast() : first
				if name.first?.isUppercase == true, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }),
					first.hasSuffix(":") || words.count == 1
				{
					names.insert(String(name))
				}
			}
		}
		return names
	}

	/// The code of every Swift file in `folder`, without comments.
	static func code(in folder: String) throws -> [(file: String, lines: [String])] {
		let folderURL = sources.appending(path: folder)
		let files = try FileManager.default.contentsOfDirectory(atPath: folderURL.path).filter {
			$0.hasSuffix(".swift")
		}
		#expect(!files.isEmpty, "no Swift files in \(folderURL.path)")
		return try files.sorted().map { file in
			let text = try String(contentsOf: folderURL.appending(path: file), encoding: .utf8)
			let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
				// A line's comment, whole-line or trailing (`//` inside a string literal is rare enough in this code).
				String(line.range(of: "//").map { line[..<$0.lowerBound] } ?? line[...])
			}
			return (file, lines)
		}
	}

	/// An identifier in a line of code, with what stands right before and after it.
	struct Token {
		var text: String
		/// `.name`: a member of something, not a name of its own.
		var followsDot: Bool
		/// `name(`: called, or declared.
		var isCalled: Bool

		static func scan(_ line: String) -> [Token] {
			var tokens: [Token] = []
			var current = ""
			var followsDot = false
			var previous: Character = " "
			func isIdentifierCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }
			for c in line + " " {
				if isIdentifierCharacter(c) {
					if current.isEmpty {
						followsDot = previous == "."
					}
					current.append(c)
				} else if !current.isEmpty {
					tokens.append(Token(text: current, followsDot: followsDot, isCalled: c == "("))
					current = ""
				}
				previous = c
			}
			return tokens
		}
	}
}
