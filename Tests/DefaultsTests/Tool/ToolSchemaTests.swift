import Foundation
import Testing

@testable import Defaults

/// With the schema an app wrote beside its settings file, `defaults write` converts a bare value to what the app's key
/// reads, or refuses it with the flag to use, and `defaults keys` lists the keys.
@Suite struct ToolSchemaTests {
	struct Window: Codable, Equatable, Defaults.Serializable {
		var width = 800
		var height = 600
	}

	/// The app's catalog, written beside the domain `app` of `tool` (or at `url`); the keys live in a store of their
	/// own, so that the file is read fresh after the tool wrote it.
	static func writeSchema(for tool: ToolRunner, to url: URL? = nil) throws {
		let store = Defaults.InMemoryStore()
		let catalog = Defaults.Catalog([
			Defaults.Key<URL>("homepage", default: URL(string: "https://example.org")!, suite: store),
			Defaults.Key<Int>("count", default: 3, suite: store),
			Defaults.Key<UUID?>("id", suite: store),
			Defaults.Key<Window>("window", default: Window(), suite: store),
			Defaults.Key<[String]>("tags", default: ["a"], suite: store),
			Defaults.Key<String>("name", default: "", suite: store),
		])
		try catalog.writeSchema(to: url ?? SchemaFile.url(besideSettingsFile: tool.file("app")))
	}

	@Test func aBareURLIsWrittenAsTheAppsURLKeyReadsIt() throws {
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		try tool.succeed("write", "app", "homepage", "https://example.com")
		try tool.succeed("write", "app", "count", "12")
		try tool.succeed("write", "app", "id", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
		try tool.succeed("write", "app", "name", "https://not-a-url-key.example")

		let store = Defaults.FileStore.at(tool.file("app"))
		#expect(
			store[Defaults.Key<URL>("homepage", default: URL(string: "https://example.org")!, suite: store)]
				== URL(string: "https://example.com"))
		#expect(store[Defaults.Key<Int>("count", default: 3, suite: store)] == 12)
		#expect(
			store[Defaults.Key<UUID?>("id", suite: store)] == UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
		#expect(try tool.contents(of: "app")["id"] as? String == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
		#expect(try tool.contents(of: "app")["name"] as? String == "https://not-a-url-key.example")
	}

	@Test(arguments: [
		(["count", "twelve"], "-string"),
		(["window", "big"], "-json"),
		(["tags", "x"], "-array"),
		(["homepage", "not a url"], "is not a URL"),
		(["id", "1234"], "is not a UUID"),
	])
	func aBareValueThatDoesNotFitIsRefusedWithTheFlagToUse(arguments: [String], expected: String) throws {
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		let result = try tool.run(["write", "app"] + arguments)
		#expect(result.status == 65, "\(result)")
		#expect(result.standardError.contains(expected), "\(result.standardError)")
		#expect(!FileManager.default.fileExists(atPath: tool.file("app").path), "nothing was written")
	}

	@Test func aTypeFlagWritesWhatItSaysDespiteTheSchema() throws {
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		try tool.succeed("write", "app", "window", "-json", #"{"width":1,"height":2}"#)
		try tool.succeed("write", "app", "count", "-string", "twelve")
		#expect(try tool.contents(of: "app")["count"] as? String == "twelve")
		let store = Defaults.FileStore.at(tool.file("app"))
		#expect(store[Defaults.Key<Window>("window", default: Window(), suite: store)] == Window(width: 1, height: 2))
	}

	@Test func keysListsTheSchema() throws {
		let tool = try ToolRunner()
		let missing = try tool.run("keys", "app")
		#expect(missing.status == 1, "\(missing)")
		#expect(missing.standardError.contains("writeSchema"))

		try Self.writeSchema(for: tool)
		let lines = try tool.succeed("keys", "app").split(separator: "\n").map(String.init)
		#expect(lines.count == 6)
		#expect(lines.contains { $0.hasPrefix("count: Int through ") && $0.hasSuffix(", default 3") }, "\(lines)")
		#expect(
			lines.contains { $0.hasPrefix("homepage: URL through ") && $0.hasSuffix("default https://example.org") })
		let json = try tool.succeed("--json", "keys", "app")
		let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: [String: Any]]
		#expect(parsed?["count"]?["default"] as? Int == 3)
		#expect(parsed?["id"]?["type"] as? String == "Optional<UUID>")
	}

	@Test func keysSaysWhichStoredValuesDoNotFit() throws {
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		try tool.seed("app", ["homepage": "https://example.com", "count": 4, "tags": "x"])
		let lines = try tool.succeed("keys", "app").split(separator: "\n").map(String.init)
		let misfits = lines.filter { $0.contains("does not decode") }
		#expect(misfits.count == 2, "\(lines)")
		#expect(
			misfits.contains {
				$0.hasPrefix("homepage:") && $0.hasSuffix("not the JSON text of a URL, which a Key<URL> reads")
			})
		#expect(misfits.contains { $0.hasPrefix("tags:") && $0.hasSuffix("does not decode: a string, not an array") })
		let json = try tool.succeed("--json", "keys", "app")
		let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: [String: Any]]
		#expect(parsed?["count"]?["doesNotDecode"] == nil)
		#expect(parsed?["homepage"]?["doesNotDecode"] is String)
	}

	struct Placement: Codable, Equatable, Defaults.Serializable {
		var x: Int
		var label: String
		var note: String?
	}

	/// A stored value of the right kind whose structure is not what the app's bridge reads: a `Codable` key's JSON
	/// with a field of another kind or without a required one, an optional key described by a sample, an array's
	/// element, a dictionary's value. A value with a field the type does not have, or without an optional one, decodes.
	@Test func keysSaysWhichStoredValuesDoNotDecodeByTheirStructure() throws {
		let tool = try ToolRunner()
		let store = Defaults.InMemoryStore()
		let placement = Defaults.Key<Placement>("placement", default: Placement(x: 1, label: "a"), suite: store)
		let last = Defaults.Key<Placement?>("last", suite: store)
		let all = Defaults.Key<[Placement]>("all", default: [], suite: store)
		let limits = Defaults.Key<[String: Int]>("limits", default: ["a": 1], suite: store)
		let good = Defaults.Key<Placement>("good", default: Placement(x: 1, label: "a"), suite: store)
		try Defaults.Catalog([placement, last, all, limits, good])
			.withSample(Placement(x: 1, label: "a", note: "n"), for: last)
			.withSample([Placement(x: 1, label: "a")], for: all)
			.writeSchema(to: SchemaFile.url(besideSettingsFile: tool.file("app")))
		try tool.seed(
			"app",
			[
				"placement": #"{"x":"one","label":"a"}"#, "last": #"{"x":1}"#,
				"all": [#"{"x":1,"label":"a"}"#, #"{"x":2,"label":3}"#], "limits": ["b": "many"],
				"good": #"{"x":1,"label":"a","extra":true}"#,
			])
		let lines = try tool.succeed("keys", "app").split(separator: "\n").map(String.init)
		func report(_ name: String) -> String? {
			lines.first { $0.hasPrefix(name + ":") }?.components(separatedBy: "does not decode: ").dropFirst().first
		}
		#expect(report("placement") == "x is a string, not a number", "\(lines)")
		#expect(report("last") == "the field 'label' is missing", "\(lines)")
		#expect(report("all") == "[1].label is a number, not a string", "\(lines)")
		#expect(report("limits") == #"["b"] is a string, not an integer"#, "\(lines)")
		#expect(report("good") == nil, "\(lines)")
		let status = try tool.run("keys", "app").status
		#expect(status == 0, "a report, not a failure: the guide promises no other status")
	}

	@Test func aSchemaFileThatIsNotOneStopsAWrite() throws {
		let tool = try ToolRunner()
		try Data("not a schema".utf8).write(to: SchemaFile.url(besideSettingsFile: tool.file("app")))
		let result = try tool.run("write", "app", "count", "12")
		#expect(result.status == 65, "\(result)")
		#expect(result.standardError.contains("schema"), "\(result.standardError)")
	}

	/// A schema named with `-schema`, wherever it is, and none beside the settings file: `write` converts by it (the
	/// option before the verb or after it) and `keys` lists it.
	@Test func aSchemaNamedOnTheCommandLineConvertsAndLists() throws {
		let tool = try ToolRunner()
		let folder = tool.folder.file("schemas")
		try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
		let schema = folder.appending(path: "app-keys.plist")
		try Self.writeSchema(for: tool, to: schema)
		try tool.succeed("-schema", schema.path, "write", "app", "homepage", "https://example.com")
		try tool.succeed("write", "-schema", schema.path, "app", "count", "12")
		let store = Defaults.FileStore.at(tool.file("app"))
		#expect(
			store[Defaults.Key<URL>("homepage", default: URL(string: "https://example.org")!, suite: store)]
				== URL(string: "https://example.com"))
		#expect(try tool.contents(of: "app")["count"] as? Int == 12)
		let refused = try tool.run("-schema", schema.path, "write", "app", "count", "twelve")
		#expect(refused.status == 65 && refused.standardError.contains("-string"), "\(refused)")

		let lines = try tool.succeed("-schema", schema.path, "keys", "app").split(separator: "\n").map(String.init)
		#expect(lines.count == 6, "\(lines)")
		#expect(lines.contains { $0.hasPrefix("homepage: URL through ") && $0.contains("default https://example.org") })
		#expect(try tool.run("keys", "app").status == 1, "no schema beside the settings file")
		// Without the option, nothing describes the key: the bare value is text.
		try tool.succeed("write", "app", "homepage", "https://example.net")
		#expect(try tool.contents(of: "app")["homepage"] as? String == "https://example.net")
	}

	/// A schema named with `-schema` that is missing, cannot be read or is not a schema is an error before anything is
	/// read or written: 66 as for any input file that cannot be read, 65 for one that is not a schema.
	@Test func aSchemaNamedOnTheCommandLineThatDoesNotReadChangesNothing() throws {
		let tool = try ToolRunner()
		try tool.seed("app", ["count": 1])
		let before = try Data(contentsOf: tool.file("app"))
		let missing = tool.folder.file("missing.schema.plist").path
		let folder = tool.folder.url.path
		let garbage = tool.folder.file("garbage.plist")
		try Data("not a schema".utf8).write(to: garbage)
		let cases: [(arguments: [String], status: Int32, says: String)] = [
			(["-schema", missing, "write", "app", "count", "12"], 66, missing),
			(["-schema", missing, "keys", "app"], 66, missing),
			(["-schema", folder, "write", "app", "count", "12"], 66, "not a regular file"),
			(["-schema", garbage.path, "write", "app", "count", "12"], 65, "is not a property list"),
			(["-schema", garbage.path, "keys", "app"], 65, "is not a property list"),
			(["-schema"], 64, "needs a value"),
			(["-schema", garbage.path, "read", "app"], 64, "-schema"),
		]
		for (arguments, status, says) in cases {
			let result = try tool.run(arguments)
			#expect(result.status == status, "\(arguments): \(result)")
			#expect(result.standardError.contains(says), "\(arguments): \(result)")
			#expect(try Data(contentsOf: tool.file("app")) == before, "\(arguments) changed the domain")
		}
	}
}

/// With a schema, the elements of `-array`, `-array-add` and `-dict` and the values of `import` are converted to what
/// the app's keys read, or refused before anything is written.
@Suite struct ToolSchemaElementTests {
	typealias Window = ToolSchemaTests.Window

	static func writeSchema(for tool: ToolRunner) throws {
		let store = Defaults.InMemoryStore()
		try Defaults.Catalog([
			Defaults.Key<[URL]>("links", default: [], suite: store),
			Defaults.Key<Set<Int>>("sizes", default: [], suite: store),
			Defaults.Key<[String: URL]>("mirrors", default: [:], suite: store),
			Defaults.Key<[Window]>("windows", default: [Window()], suite: store),
			Defaults.Key<URL>("homepage", default: URL(string: "https://example.org")!, suite: store),
			Defaults.Key<Int>("count", default: 3, suite: store),
		]).writeSchema(to: SchemaFile.url(besideSettingsFile: tool.file("app")))
	}

	static func read<Value: Defaults.Serializable>(_ tool: ToolRunner, _ name: String, default value: Value) -> Value {
		let store = Defaults.FileStore.at(tool.file("app"))
		let key = Defaults.Key<Value>(name, default: value, suite: store)
		#expect(
			{ if case .current = Defaults.storedState(of: key) { true } else { false } }(),
			"\(name) decodes as the app reads it")
		return store[key]
	}

	@Test func eachElementIsWrittenAsTheAppsKeyReadsIt() throws {
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		try tool.succeed("write", "app", "links", "-array", "https://a.example", "/tmp/b")
		try tool.succeed("write", "app", "links", "-array-add", "https://c.example")
		try tool.succeed("write", "app", "sizes", "-array", "10", "-int", "20")
		try tool.succeed("write", "app", "mirrors", "-dict", "eu", "https://eu.example")
		#expect(
			Self.read(tool, "links", default: [URL]())
				== [URL(string: "https://a.example")!, URL(filePath: "/tmp/b"), URL(string: "https://c.example")!])
		#expect(Self.read(tool, "sizes", default: Set<Int>()) == [10, 20])
		#expect(Self.read(tool, "mirrors", default: [String: URL]()) == ["eu": URL(string: "https://eu.example")!])
	}

	@Test(arguments: [
		(["links", "-array", "https://a.example", "not a url"], "-string"),
		(["sizes", "-array", "ten"], "is not an integer"),
		(["windows", "-array", "big"], "-json"),
		(["count", "-array", "1"], "-int"),
		(["links", "-dict", "a", "https://a.example"], "-array"),
		(["homepage", "-array", "https://a.example"], "-json"),
	])
	func anElementThatDoesNotFitIsRefusedWithTheFlagToUse(arguments: [String], expected: String) throws {
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		let result = try tool.run(["write", "app"] + arguments)
		#expect(result.status == 65, "\(result)")
		#expect(result.standardError.contains(expected), "\(result.standardError)")
		#expect(!FileManager.default.fileExists(atPath: tool.file("app").path), "nothing was written")
	}

	@Test func anImportIsConvertedByTheSchema() throws {
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		let input = tool.folder.file("input.plist")
		let values: [String: Any] = [
			"homepage": "https://example.com", "links": ["https://a.example"], "sizes": ["7"], "other": "kept",
		]
		try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0).write(to: input)
		try tool.succeed("import", "app", input.path)
		#expect(
			Self.read(tool, "homepage", default: URL(string: "https://example.org")!)
				== URL(string: "https://example.com"))
		#expect(Self.read(tool, "links", default: [URL]()) == [URL(string: "https://a.example")!])
		#expect(Self.read(tool, "sizes", default: Set<Int>()) == [7])
		#expect(try tool.contents(of: "app")["other"] as? String == "kept")

		// What export writes imports again unchanged: the values already decode.
		let exported = tool.folder.file("exported.plist")
		try tool.succeed("export", "app", exported.path)
		try tool.succeed("import", "app", exported.path)
		#expect(try tool.contents(of: "app").keys.sorted() == ["homepage", "links", "other", "sizes"])
		#expect(Self.read(tool, "links", default: [URL]()) == [URL(string: "https://a.example")!])
	}

	@Test func anImportThatDoesNotFitChangesNothing() throws {
		let cases: [(values: [String: Any], expected: String)] = [
			(["count": "twelve", "homepage": "https://example.net"], "count"),
			(["links": ["https://a.example", "not a url"]], "the element 2"),
			(["windows": [#"{"width":"wide","height":1}"#]], "width is a string"),
		]
		let tool = try ToolRunner()
		try Self.writeSchema(for: tool)
		try tool.seed("app", ["count": 1, "kept": "yes"])
		let before = try Data(contentsOf: tool.file("app"))
		let input = tool.folder.file("input.plist")
		for (values, expected) in cases {
			try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0).write(to: input)
			let result = try tool.run("import", "app", input.path)
			#expect(result.status == 65, "\(result)")
			#expect(result.standardError.contains(expected), "\(result.standardError)")
			#expect(try Data(contentsOf: tool.file("app")) == before, "byte for byte")
		}
	}
}

/// `keys` says whether a key is locked as the locks files say now, not as they were when the app wrote the schema.
@Suite struct ToolSchemaLockTests {
	@Test func keysShowsTheLocksOfNow() throws {
		let tool = try ToolRunner(systemFolders: ["system"])
		try ToolSchemaTests.writeSchema(for: tool)
		let locks = tool.systemFolders[0].appending(path: "app.locks.plist")
		func lockedKeys() throws -> [String] {
			let lines = try tool.succeed("keys", "app").split(separator: "\n").map(String.init)
			let json = try tool.succeed("--json", "keys", "app")
			let parsed = try #require(
				try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: [String: Any]])
			let fromJSON = parsed.keys.filter { parsed[$0]?["locked"] as? Bool == true }.sorted()
			let fromText = lines.filter { $0.contains(", locked by \(locks.path)") }.map {
				String($0.prefix { $0 != ":" })
			}
			#expect(fromJSON == fromText.sorted())
			return fromJSON
		}
		#expect(try lockedKeys() == [])
		try PropertyListSerialization.data(fromPropertyList: ["count": 5], format: .xml, options: 0).write(to: locks)
		#expect(try lockedKeys() == ["count"])
		try FileManager.default.removeItem(at: locks)
		#expect(try lockedKeys() == [])
	}
}
