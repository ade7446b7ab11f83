import DefaultsTestSupport
import Foundation
import Testing

/// Bad input: unknown verbs and flags, missing arguments, corrupt files; and `--help`.
@Suite struct ToolErrorTests {
	let tool: ToolRunner

	init() throws {
		tool = try ToolRunner()
	}

	static let verbs = [
		"read", "read-type", "write", "delete", "rename", "domains", "find", "export", "import", "watch", "snapshot",
		"verify",
	]

	@Test func anUnknownVerbIsAUsageError() throws {
		let result = try tool.run("frobnicate", "app")
		#expect(result.status == 64, "\(result)")
		#expect(result.standardError.contains("Unknown verb \"frobnicate\""))
		#expect(result.standardOutput.isEmpty)
	}

	@Test(arguments: [
		["--frob", "read"], ["read", "app", "--frob"], ["domains", "-x"], ["watch", "app", "--count"],
	])
	func anUnknownOrIncompleteOptionIsAUsageError(_ arguments: [String]) throws {
		let result = try tool.run(arguments)
		#expect(result.status == 64, "\(arguments): \(result)")
	}

	@Test(arguments: [
		["read-type"], ["read-type", "app"], ["write"], ["write", "app"], ["delete"], ["rename", "app", "a"],
		["find"], ["export", "app"], ["import"], ["watch"], ["snapshot", "app"], ["verify"], ["read", "app", "k", "x"],
		["read", ".."], ["domains", "extra"],
	])
	func aMissingOrExtraArgumentIsAUsageError(_ arguments: [String]) throws {
		let result = try tool.run(arguments)
		#expect(result.status == 64, "\(arguments): \(result)")
		#expect(result.standardError.contains("usage: defaults \(arguments[0])"), "\(result)")
	}

	@Test func noVerbPrintsTheOverviewAndFails() throws {
		let result = try tool.run()
		#expect(result.status == 64)
		#expect(result.standardError.contains("usage: defaults"))
	}

	@Test func theOverviewListsEveryVerbAndTheExitStatuses() throws {
		for arguments in [["--help"], ["help"], ["-h"]] {
			let result = try tool.run(arguments)
			#expect(result.status == 0, "\(arguments): \(result)")
			for verb in Self.verbs {
				#expect(result.standardOutput.contains("\n  \(verb) "), "\(verb)")
			}
			#expect(result.standardOutput.contains("65  a value that does not parse"))
		}
	}

	@Test(arguments: verbs)
	func eachVerbHasHelp(_ verb: String) throws {
		let viaHelp = try tool.run("help", verb)
		#expect(viaHelp.status == 0, "\(viaHelp)")
		#expect(viaHelp.standardOutput.hasPrefix("usage: defaults \(verb) "))
		#expect(viaHelp.standardOutput.contains("Exit status:"))
		let viaFlag = try tool.run(verb, "--help")
		#expect(viaFlag.status == 0, "\(viaFlag)")
		#expect(viaFlag.standardOutput == viaHelp.standardOutput)
	}

	@Test func helpForAnUnknownVerbFails() throws {
		#expect(try tool.run("help", "frobnicate").status == 64)
	}

	static let corruptBytes = Data("this is not { a property list".utf8)

	@Test(arguments: [
		["read", "broken"], ["read", "broken", "key"], ["read-type", "broken", "key"], ["write", "broken", "k", "v"],
		["write", "broken", "k", "-array-add", "v"], ["delete", "broken"], ["delete", "broken", "k"],
		["rename", "broken", "a", "b"], ["export", "broken", "-"], ["import", "broken", "/dev/null"],
		["snapshot", "broken", "-"], ["watch", "broken", "--timeout", "1"],
	])
	func aCorruptFileIsRefusedAndLeftUntouched(_ arguments: [String]) throws {
		try Self.corruptBytes.write(to: tool.file("broken"))
		let before = try FileManager.default.contentsOfDirectory(atPath: tool.folder.url.path).sorted()
		let result = try tool.run(arguments)
		#expect(result.status == 65, "\(arguments): \(result)")
		#expect(result.standardError.contains("broken.plist is corrupt"), "\(result)")
		#expect(try Data(contentsOf: tool.file("broken")) == Self.corruptBytes)
		// Not moved aside, and no lock or temporary file made beside it: no store was opened on it.
		#expect(try FileManager.default.contentsOfDirectory(atPath: tool.folder.url.path).sorted() == before)
	}

	@Test func aCorruptDomainIsReportedButDoesNotHideTheOthers() throws {
		try Self.corruptBytes.write(to: tool.file("broken"))
		try tool.succeed("write", "fine", "k", "v")
		let all = try tool.run("read")
		#expect(all.status == 65, "\(all)")
		#expect(all.standardOutput.contains("fine"))
		#expect(all.standardError.contains("broken.plist is corrupt"))
		let found = try tool.run("find", "k")
		#expect(found.status == 0, "\(found)")
		#expect(try Data(contentsOf: tool.file("broken")) == Self.corruptBytes)
	}

	@Test func anEmptyFileIsAnEmptyDomain() throws {
		try Data().write(to: tool.file("empty"))
		#expect(try tool.succeed("read", "empty") == "{\n}\n")
		try tool.succeed("write", "empty", "k", "v")
		#expect(try tool.succeed("read", "empty", "k") == "v\n")
	}

	@Test(arguments: ["set inside", "shared fan-out", "huge offset", "OpenStep missing semicolon"])
	func aHostileFileIsReportedInOneLineWithoutACrashOrAHang(name: String) throws {
		let data = try #require(HostileFiles.all.first { $0.name == name }).data
		try data.write(to: tool.file("hostile"))
		try tool.succeed("write", "fine", "k", "v")
		try data.write(to: tool.folder.file("import.plist"))
		for arguments in [
			["read", "hostile"], ["read", "hostile", "k"], ["write", "hostile", "k", "v"],
			["import", "fine", tool.folder.file("import.plist").path],
		] {
			let result = try tool.run(arguments, timeout: 15)
			#expect(!result.wasSignaled && result.status == 65, "\(arguments): \(result)")
			#expect(result.standardError.split(separator: "\n").count == 1, "\(arguments): \(result)")
			#expect(!result.standardError.contains("CFPropertyList"), "\(result)")
		}
		let found = try tool.run(["find", "k"], timeout: 15)
		#expect(!found.wasSignaled && found.standardOutput.contains("fine"), "\(found)")
		#expect(try Data(contentsOf: tool.file("hostile")) == data)
		#expect(try tool.succeed("read", "fine", "k") == "v\n")
	}
}
