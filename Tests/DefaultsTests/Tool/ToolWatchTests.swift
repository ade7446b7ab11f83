import Foundation
import Testing

#if canImport(Glibc)
	import Glibc
#endif

/// `defaults watch` sees changes other processes make, and a running program's observers see `defaults write`.
@Suite(.scaledTimeLimit(minutes: 1)) struct ToolWatchTests {
	let tool: ToolRunner

	init() throws {
		tool = try ToolRunner()
		try tool.seed("app", ["level": 1, "name": "Ada"])
	}

	/// Starts `defaults watch` and waits until it says that the watch is in place.
	func startWatching(_ arguments: String...) throws -> ChildProcess {
		let watch = try ChildProcess(["watch"] + arguments, executable: "defaults", environment: tool.environment)
		#expect(waitUntil { watch.standardErrorSoFar.contains("Watching ") || !watch.isRunning }, "never ready")
		return watch
	}

	@Test func watchPrintsAWriteFromAnotherProcess() throws {
		let watch = try startWatching("app", "--count", "1", "--timeout", "30")
		try tool.succeed("write", "app", "level", "-int", "2")
		let result = try watch.wait(timeout: 40)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["level = 2"])
	}

	@Test func watchPrintsOnlyKeysThatChangedIncludingNewAndRemovedOnes() throws {
		let watch = try startWatching("app", "--count", "3", "--timeout", "30")
		// Written again with the same value: not a change.
		try tool.succeed("write", "app", "level", "-int", "1")
		try tool.succeed("write", "app", "name", "Grace Hopper")
		#expect(waitUntil { watch.standardOutputSoFar.contains("name") })
		try tool.succeed("write", "app", "added", "-array", "x", "y")
		#expect(waitUntil { watch.standardOutputSoFar.contains("added") })
		try tool.succeed("delete", "app", "level")
		let result = try watch.wait(timeout: 40)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["name = \"Grace Hopper\"", "added = (x, y)", "level (removed)"])
	}

	@Test func watchOfNamedKeysIgnoresTheOthersAndPrintsJSONLines() throws {
		let watch = try startWatching("--json", "app", "level", "--count", "1", "--timeout", "30")
		try tool.succeed("write", "app", "name", "ignored")
		try tool.succeed("write", "app", "level", "-int", "5")
		let result = try watch.wait(timeout: 40)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["{\"key\":\"level\",\"value\":5}"])
	}

	@Test func watchSeesAProgramThatUsesTheLibrary() throws {
		let watch = try startWatching("app", "--count", "1", "--timeout", "30")
		let writer = try ChildProcess.run(
			["observation-write", tool.file("app").path, "level=9"], environment: tool.environment)
		#expect(writer.status == 0, "\(writer)")
		let result = try watch.wait(timeout: 40)
		#expect(result.lines == ["level = 9"], "\(result)")
	}

	@Test func aRunningProgramsObserversSeeTheWrite() async throws {
		// The observer keeps no clock: it waits for the value, or for `giveUp`, which the wait creates at its limit.
		let giveUp = tool.folder.file("give-up")
		let observer = try ChildProcess(
			["observation-await", tool.file("app").path, "name", "from the shell", giveUp.path],
			environment: tool.environment)
		defer { observer.stopIfRunning() }
		// Generous: in CI's second pass a child starts slowly and this task waits for a thread (20 s missed once).
		try #require(try await observer.waitForOutput("ready", timeout: 40), "\(observer.standardErrorSoFar)")
		try tool.succeed("write", "app", "name", "from the shell")
		let result = try await observer.wait(timeout: 30, givingUpBy: giveUp)
		#expect(result.status == 0, "\(result)")
	}

	@Test func watchLeavesAFileThatStopsParsingAsItIsAndGoesOnWhenItIsRewritten() throws {
		let watch = try startWatching("app", "--count", "2", "--timeout", "30")
		// Rewritten in place, as a program that truncates and writes its file does.
		let garbage = Data("this is not a property list \u{1}\u{2}".utf8)
		let handle = try FileHandle(forWritingTo: tool.file("app"))
		try handle.truncate(atOffset: 0)
		try handle.write(contentsOf: garbage)
		try handle.close()
		#expect(waitUntil { watch.standardErrorSoFar.contains("is corrupt (") }, "no warning")
		// A write to the corrupt file is refused and leaves it as it is.
		#expect(try tool.run("write", "app", "level", "-int", "2").status == 65)
		#expect(try Data(contentsOf: tool.file("app")) == garbage)
		// Another program puts the old values back, which is no change, with one new key: the watch printing that key,
		// and only it, shows it read the file again and kept the values it had before the file stopped parsing.
		try tool.seed("app", ["level": 1, "name": "Ada", "marker": 1])
		#expect(waitUntil { watch.standardOutputSoFar.contains("marker") || !watch.isRunning }, "the watch ended")
		try tool.succeed("write", "app", "level", "-int", "3")
		let result = try watch.wait(timeout: 40)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["marker = 1", "level = 3"])
		// One warning for the whole time the file did not parse, however often it was checked, and never moved aside.
		#expect(result.standardError.components(separatedBy: "is corrupt (").count == 2, "\(result)")
		let names = try FileManager.default.contentsOfDirectory(atPath: tool.folder.url.path(percentEncoded: false))
		#expect(!names.contains { $0.contains(".corrupt-") }, "\(names)")
	}

	@Test func watchEndsCleanlyOnAnInterruptOrATimeout() throws {
		let interrupted = try startWatching("app")
		interrupted.kill(SIGINT)
		#expect(try interrupted.wait(timeout: 20).status == 0)
		let terminated = try startWatching("app")
		terminated.kill(SIGTERM)
		let result = try terminated.wait(timeout: 20)
		#expect(result.status == 0 && !result.wasSignaled, "\(result)")
		#expect(try tool.run("watch", "app", "--timeout", "0.5").status == 0)
		// Fewer changes than asked for.
		#expect(try tool.run("watch", "app", "--count", "1", "--timeout", "0.5").status == 1)
		#expect(try tool.run("watch", "app", "--count", "0").status == 64)
	}
}
