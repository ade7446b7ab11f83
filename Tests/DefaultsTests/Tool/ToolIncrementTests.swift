import Foundation
import Testing

/// `defaults increment` and `write -array-add`: the command's read-modify-writes, alone and from several processes at
/// once.
@Suite(.scaledTimeLimit(minutes: 1)) struct ToolIncrementTests {
	let tool: ToolRunner

	init() throws {
		tool = try ToolRunner()
	}

	@Test func incrementsFromNothingAndByAnAmountAndPrintsTheNewValue() throws {
		#expect(try tool.succeed("increment", "app", "launches") == "1\n")
		#expect(try tool.succeed("increment", "app", "launches") == "2\n")
		#expect(try tool.succeed("increment", "app", "launches", "--by", "40") == "42\n")
		#expect(try tool.succeed("increment", "app", "launches", "--by", "-50") == "-8\n")
		#expect(try tool.succeed("read-type", "app", "launches") == "Type is integer\n")
		#expect(try FileContents.values(of: tool.file("app"))["launches"] as? Int == -8)
	}

	@Test(
		arguments: [
			(["-string", "many"], "increment", "app", "k", "--by", "1"),
			(["-float", "1.5"], "increment", "app", "k", "--by", "1"),
			(["-bool", "yes"], "increment", "app", "k", "--by", "1"),
			(["-int", "9223372036854775807"], "increment", "app", "k", "--by", "1"),
			(["-int", "5"], "increment", "app", "k", "--by", "x"),
		] as [([String], String, String, String, String, String)])
	func aValueThatIsNotAnIntegerOrASumThatOverflowsWritesNothing(
		_ stored: [String], _ verb: String, _ domain: String, _ key: String, _ by: String, _ amount: String
	) throws {
		try tool.succeed(["write", "app", "k"] + stored)
		let before = try Data(contentsOf: tool.file("app"))
		let result = try tool.run(verb, domain, key, by, amount)
		#expect(result.status == 65, "\(result)")
		#expect(result.standardError.contains("nothing was written"), "\(result)")
		#expect(try Data(contentsOf: tool.file("app")) == before)
	}

	@Test func incrementsFromSeveralProcessesAtOnceAreAllCounted() throws {
		let folder = try TemporaryDirectory.inMemory()
		let file = folder.file("counter.plist")
		let executable = try ChildProcess.helperURL(named: "defaults").path
		let start = folder.file("start")
		let processes = 4
		let each = 25
		// Each shell waits for the start file, then runs the command `each` times in a row.
		let script =
			"while [ ! -e \"$1\" ]; do sleep 0.01; done; i=0; while [ $i -lt \(each) ]; do "
			+ "\"$2\" increment -app \"$3\" count > /dev/null || exit 1; i=$((i + 1)); done"
		let shells = try (0..<processes).map { _ in
			try ChildProcess(
				["-c", script, "sh", start.path, executable, file.path], executable: "/bin/sh",
				environment: folder.configEnvironment)
		}
		// Programs updating the same key with Defaults.update take turns with the command.
		let programs = try (0..<2).map { _ in
			try ChildProcess(
				["update-increment", file.path, "count", "\(each)", start.path], environment: folder.configEnvironment)
		}
		#expect(FileManager.default.createFile(atPath: start.path, contents: nil))
		for child in shells + programs {
			let result = try child.wait(timeout: 45)
			#expect(result.status == 0 && !result.wasSignaled, "\(result)")
		}
		#expect(try FileContents.values(of: file)["count"] as? Int == (processes + programs.count) * each)
	}

	@Test func arrayAddsFromSeveralProcessesAtOnceAreAllKept() throws {
		let folder = try TemporaryDirectory.inMemory()
		let file = folder.file("list.plist")
		let executable = try ChildProcess.helperURL(named: "defaults").path
		let start = folder.file("start")
		let each = 15
		let script =
			"while [ ! -e \"$1\" ]; do sleep 0.01; done; i=0; while [ $i -lt \(each) ]; do "
			+ "\"$2\" write -app \"$3\" list -array-add \"$4-$i\" || exit 1; i=$((i + 1)); done"
		let shells = try ["a", "b", "c"].map { name in
			try ChildProcess(
				["-c", script, "sh", start.path, executable, file.path, name], executable: "/bin/sh",
				environment: folder.configEnvironment)
		}
		#expect(FileManager.default.createFile(atPath: start.path, contents: nil))
		for shell in shells {
			let result = try shell.wait(timeout: 45)
			#expect(result.status == 0 && !result.wasSignaled, "\(result)")
		}
		let list = try #require(try FileContents.values(of: file)["list"] as? [String])
		for name in ["a", "b", "c"] {
			#expect(list.filter { $0.hasPrefix("\(name)-") } == (0..<each).map { "\(name)-\($0)" })
		}
	}
}
