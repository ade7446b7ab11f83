import Foundation
import Testing

/// `defaults delete`, `rename`, `export`, `import`, `snapshot` and `verify`.
@Suite struct ToolEditTests {
	let tool: ToolRunner

	init() throws {
		tool = try ToolRunner()
		try tool.seed("app", ["a": 1, "b": "two", "c": [true, 3.5]])
	}

	@Test func deleteRemovesAKeyOrTheWholeDomain() throws {
		try tool.succeed("delete", "app", "a")
		#expect(Set(try tool.contents(of: "app").keys) == ["b", "c"])
		let again = try tool.run("delete", "app", "a")
		#expect(again.status == 1, "\(again)")
		try tool.succeed("delete", "app")
		#expect(try tool.contents(of: "app").isEmpty)
		#expect(try tool.succeed("read", "app") == "{\n}\n")
		let missing = try tool.run("delete", "nothing")
		#expect(missing.status == 1, "\(missing)")
		#expect(!FileManager.default.fileExists(atPath: tool.file("nothing").path))
	}

	@Test func renameMovesTheValue() throws {
		try tool.succeed("rename", "app", "c", "list")
		let values = try tool.contents(of: "app")
		#expect(values["c"] == nil)
		#expect(try tool.succeed("--json", "read", "app", "list") == "[\n  true,\n  3.5\n]\n")
		let missing = try tool.run("rename", "app", "absent", "other")
		#expect(missing.status == 1, "\(missing)")
		#expect(missing.standardError.contains("absent does not exist"))
		#expect(try tool.contents(of: "app").count == 3)
	}

	@Test func exportAndImportRoundTripThroughAFile() throws {
		let exported = tool.folder.file("exported.plist")
		try tool.succeed("export", "app", exported.path)
		let text = try String(contentsOf: exported, encoding: .utf8)
		#expect(text.hasPrefix("<?xml"))
		try tool.succeed("write", "copy", "stale", "gone after the import")
		try tool.succeed("import", "copy", exported.path)
		#expect(try tool.succeed("read", "copy") == (try tool.succeed("read", "app")))
		#expect(try tool.contents(of: "copy")["stale"] == nil)
	}

	@Test func exportAndImportRoundTripThroughAPipe() throws {
		let exported = try tool.succeed("export", "app", "-")
		let imported = try tool.run(["import", "copy", "-"], input: Data(exported.utf8))
		#expect(imported.status == 0, "\(imported)")
		#expect(try tool.succeed("--json", "read", "copy") == (try tool.succeed("--json", "read", "app")))
	}

	@Test func importRefusesWhatIsNotADictionaryPropertyList() throws {
		let text = try tool.run(["import", "app", "-"], input: Data("just words, not a list {".utf8))
		#expect(text.status == 65, "\(text)")
		let array = try tool.run(["import", "app", "-"], input: Data("(a, b)".utf8))
		#expect(array.status == 65, "\(array)")
		#expect(array.standardError.contains("not a dictionary"))
		let absent = try tool.run("import", "app", tool.folder.file("absent.plist").path)
		#expect(absent.status == 66, "\(absent)")
		#expect(try tool.contents(of: "app").count == 3)
	}

	@Test func exportOfAMissingDomainFails() throws {
		let result = try tool.run("export", "nothing", "-")
		#expect(result.status == 1, "\(result)")
		let unwritable = try tool.run("export", "app", tool.folder.file("no/such/folder/out.plist").path)
		#expect(unwritable.status == 73, "\(unwritable)")
	}

	@Test func snapshotAndVerifyPinTheStoredForms() throws {
		let snapshot = tool.folder.file("Snapshot.plist")
		try tool.succeed("snapshot", "app", snapshot.path)
		let pinned = try PropertyListSerialization.propertyList(from: Data(contentsOf: snapshot), format: nil)
		#expect((pinned as? [String: Any])?.count == 3)
		#expect(try tool.succeed("verify", "app", snapshot.path).contains("matches"))

		try tool.succeed("write", "app", "a", "-int", "2")
		try tool.succeed("write", "app", "d", "new")
		let changed = try tool.run("verify", "app", snapshot.path)
		#expect(changed.status == 1, "\(changed)")
		#expect(changed.standardOutput.contains("'a' changed"))
		#expect(changed.standardOutput.contains("'d' is not in the snapshot"))
		let json = try tool.run("verify", "app", snapshot.path, "--json")
		#expect(json.status == 1)
		let differences = try #require(
			try JSONSerialization.jsonObject(with: Data(json.standardOutput.utf8)) as? [[String: Any]])
		#expect(differences.map { $0["key"] as? String } == ["a", "d"])
		#expect(differences.first?["kind"] as? String == "changed")
		// Only the named keys are checked.
		#expect(try tool.run("verify", "app", snapshot.path, "b", "c").status == 0)

		let absent = try tool.run("verify", "app", tool.folder.file("absent.plist").path)
		#expect(absent.status == 66, "\(absent)")
	}

	@Test func snapshotOfSomeKeysToStandardOutput() throws {
		let output = try tool.succeed("snapshot", "app", "-", "b")
		let parsed = try PropertyListSerialization.propertyList(from: Data(output.utf8), format: nil)
		#expect((parsed as? [String: Any])?.keys.sorted() == ["Defaults.Snapshot.keys", "b"])
		#expect((parsed as? [String: Any])?["Defaults.Snapshot.keys"] as? [String] == ["b"])
	}

	/// A snapshot of some keys remembers them: verify without keys checked every key of the domain, and reported
	/// keys the snapshot was never asked about (a program's own `DefaultsMigrationVersion`).
	@Test func aSnapshotOfSomeKeysIsVerifiedOnThoseKeys() throws {
		let snapshot = tool.folder.file("Some.plist")
		try tool.succeed("snapshot", "app", snapshot.path, "a", "b", "never-stored")
		try tool.succeed("write", "app", "DefaultsMigrationVersion", "-int", "3")
		try tool.succeed("write", "app", "c", "changed, but not asked about")
		let verified = try tool.run("verify", "app", snapshot.path)
		#expect(verified.status == 0, "\(verified)")
		#expect(verified.standardOutput.contains("matches"), "\(verified)")

		try tool.succeed("write", "app", "b", "changed")
		try tool.succeed("write", "app", "never-stored", "now stored")
		let changed = try tool.run("verify", "app", snapshot.path, "--json")
		#expect(changed.status == 1, "\(changed)")
		let differences = try #require(
			try JSONSerialization.jsonObject(with: Data(changed.standardOutput.utf8)) as? [[String: Any]])
		#expect(differences.map { $0["key"] as? String } == ["b", "never-stored"])
	}
}

/// The whole command line is understood before anything changes: help and unknown options never act.
@Suite struct ToolCommandLineSafetyTests {
	let tool: ToolRunner

	init() throws {
		tool = try ToolRunner()
		try tool.succeed("write", "app", "a", "1")
		try tool.succeed("write", "app", "b", "2")
	}

	@Test(arguments: [
		["delete", "app", "-h"], ["delete", "app", "a", "--help"], ["delete", "-help", "app"],
		["rename", "app", "a", "c", "-h"], ["write", "app", "a", "-h"], ["write", "app", "a", "-string", "-h"],
		["import", "app", "/dev/null", "-h"], ["write", "app", "-h", "x"],
	])
	func helpAnywherePrintsHelpAndChangesNothing(_ arguments: [String]) throws {
		let before = try Data(contentsOf: tool.file("app"))
		let result = try tool.run(arguments)
		#expect(result.status == 0, "\(arguments): \(result)")
		#expect(result.standardOutput.contains("usage: defaults \(arguments[0])"), "\(result)")
		#expect(try Data(contentsOf: tool.file("app")) == before, "\(arguments) changed the file")
	}

	@Test(arguments: [
		["delete", "app", "--force"], ["delete", "app", "a", "-x"], ["rename", "app", "a", "c", "--dry-run"],
		["import", "app", "/dev/null", "--merge"], ["write", "app", "a", "-strin", "v"],
		["write", "--all", "app", "a", "v"],
	])
	func anUnknownOptionIsAUsageErrorAndChangesNothing(_ arguments: [String]) throws {
		let before = try Data(contentsOf: tool.file("app"))
		let result = try tool.run(arguments)
		#expect(result.status == 64, "\(arguments): \(result)")
		#expect(try Data(contentsOf: tool.file("app")) == before, "\(arguments) changed the file")
	}

	@Test func textThatLooksLikeAFlagIsWrittenAfterADoubleDash() throws {
		try tool.succeed("write", "app", "flag", "--", "-h")
		#expect(try tool.succeed("read", "app", "flag") == "-h\n")
	}
}
