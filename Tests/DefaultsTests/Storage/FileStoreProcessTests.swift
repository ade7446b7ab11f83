import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// The property-list file store across processes: each test runs the `DefaultsTestHelper` executable with a
/// temporary `XDG_CONFIG_HOME`.
@Suite(.scaledTimeLimit(minutes: 1)) struct FileStoreProcessTests {
	let folder: TemporaryDirectory

	init() throws {
		folder = try TemporaryDirectory()
	}

	/// The helper's standard store: `$XDG_CONFIG_HOME/<executable name>.plist`.
	var standardFile: URL { folder.file("DefaultsTestHelper.plist") }

	@discardableResult
	func run(_ arguments: String...) throws -> ChildProcess.Result {
		let result = try ChildProcess.run(arguments, environment: folder.configEnvironment)
		#expect(result.status == 0, "\(arguments): \(result)")
		return result
	}

	func parse(_ url: URL) throws -> [String: Any] {
		let parsed = try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil)
		return try #require(parsed as? [String: Any])
	}

	@Test func aWriteWithNoFlushSurvivesTheProcessExit() throws {
		try run("file-store-write", "standard", "volume", "int:7")
		#expect(FileManager.default.fileExists(atPath: standardFile.path))
		#expect(try run("file-store-read", "standard", "volume").lines == ["int:7"])
	}

	@Test func keysWithNoSuiteLiveInTheStandardFileStore() throws {
		try run("file-store-write", "default", "name", "string:Ada")
		#expect(try run("file-store-read", "standard", "name").lines == ["string:Ada"])
	}

	@Test func aSubSecondDateReadsBackExactlyAfterAReload() throws {
		let date = Date(timeIntervalSinceReferenceDate: 700_000_000.123_456_7)
		let written = "date:\(date.timeIntervalSinceReferenceDate.bitPattern)"
		try run("file-store-write", "standard", "when", written)
		#expect(try run("file-store-read", "standard", "when").lines == [written])
		// Foundation reads the same date from the binary file.
		#expect(try run("userdefaults-read", "when").lines == [written])
	}

	@Test func foundationReadsWhatTheStoreWrites() throws {
		try run("file-store-write", "standard", "count", "int:42")
		try run("file-store-write", "standard", "title", "string:Grüße")
		#expect(try run("userdefaults-read", "count").lines == ["int:42"])
		#expect(try run("userdefaults-read", "title").lines == ["string:Grüße"])
	}

	@Test func theStoreReadsWhatFoundationWrites() throws {
		try run("userdefaults-write", "count", "int:5")
		try run("userdefaults-write", "ratio", "double:0.25")
		#expect(try run("file-store-read", "standard", "count").lines == ["int:5"])
		#expect(try run("file-store-read", "standard", "ratio").lines == ["double:0.25"])
		// And keeps Foundation's keys when it writes its own.
		try run("file-store-write", "standard", "own", "int:1")
		#expect(try run("userdefaults-read", "count").lines == ["int:5"])
	}

	@Test func launchArgumentsAreReadAboveStoredValuesForTheRun() throws {
		#expect(try run("file-store-read", "standard", "greeting", "-greeting", "hello").lines == ["string:hello"])
		#expect(try run("file-store-read", "standard", "list", "-list", "(a, b)").lines == ["array:string:a,string:b"])
		try run("file-store-write", "standard", "greeting", "string:stored")
		#expect(try run("file-store-read", "standard", "greeting", "-greeting", "hello").lines == ["string:hello"])
		#expect(try run("file-store-read", "standard", "greeting").lines == ["string:stored"])
		#expect(try parse(standardFile) as NSDictionary == ["greeting": "stored"] as NSDictionary)
	}

	@Test func twoProcessesWritingTheirOwnKeysLoseNoUpdate() throws {
		let file = folder.file("shared.plist")
		let count = 200
		let first = try ChildProcess(["file-store-write-many", file.path, "first", "\(count)"])
		let second = try ChildProcess(["file-store-write-many", file.path, "second", "\(count)"])
		let results = [try first.wait(), try second.wait()]
		for result in results {
			#expect(result.status == 0, "\(result)")
		}
		let values = try parse(file)
		#expect(values.count == 2 * count)
		for index in 0..<count {
			#expect(values["first-\(index)"] as? Int == index)
			#expect(values["second-\(index)"] as? Int == index)
		}
	}

	@Test func aWriterKilledMidStormLeavesAWholeFile() throws {
		let file = folder.file("storm.plist")
		let writer = try ChildProcess(["file-store-storm", file.path, "round"])
		defer { writer.kill() }
		// The limits are for a hang: the writer's start takes seconds on a busy machine, and a fixed span of reading
		// counted from before it could end before the first write. A passing test goes on as soon as the file is there.
		#expect(
			waitUntil(seconds: Double(30 * sanitizerSlowdown)) {
				FileManager.default.fileExists(atPath: file.path) || !writer.isRunning
			})
		// This process keeps parsing the file while the other rewrites it, until it has seen the writer replace it
		// at least twice over many parses, then kills it mid-write.
		var parses = 0
		var rounds: Set<Int> = []
		let readingLimit = ContinuousClock.now + .seconds(30).scaledForSanitizer
		while parses < 100 || rounds.count <= 2, ContinuousClock.now < readingLimit {
			let values = try parse(file)
			#expect(values["payload"] is Data)
			#expect(values.count == 2_002)
			rounds.insert(values["round"] as? Int ?? -1)
			parses += 1
		}
		writer.kill()
		let result = try writer.wait()
		#expect(result.wasSignaled && result.status == SIGKILL, "\(result)")
		#expect(parses > 10)
		#expect(rounds.count > 2, "the writer should have replaced the file while it was read")
		let final = try parse(file)
		#expect(final.count == 2_002)
		let payload = try #require(final["payload"] as? Data)
		let round = try #require(final["round"] as? Int)
		// A write-behind flush may run between the writer's two writes of a round, so the payload may lag by one.
		#expect(payload.count == 64 * 1024 && payload.allSatisfy { $0 == payload.first })
		#expect([round, round - 1].map { UInt8(truncatingIfNeeded: $0) }.contains(payload.first ?? 0))
		// A store opening the file after the crash reads it, and cleans up the killed writer's temporary file.
		let reader = Defaults.FileStore.at(file)
		#expect(reader.storedValue(forKey: "round") as? Int == round)
		try reader.write(0, forKey: "after")
		#expect(reader.flush())
		let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter {
			$0.contains(".tmp-")
		}
		#expect(leftovers.isEmpty)
	}

	@Test func aCorruptFileIsKeptAsideAndReported() throws {
		let garbage = Data("<?xml version=\"1.0\"?><plist><dict><key>cut".utf8)
		try garbage.write(to: standardFile)
		let result = try run("file-store-read", "standard", "volume")
		#expect(result.lines.last == "missing")
		#expect(result.lines.contains { $0.hasPrefix("failure storage:") && $0.contains("moved to") }, "\(result)")
		let asides = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
			.filter { $0.hasPrefix("DefaultsTestHelper.plist.corrupt-") }
		#expect(asides.count == 1)
		#expect(try Data(contentsOf: folder.file(try #require(asides.first))) == garbage)
		// The store starts empty and writes a fresh file; the bytes aside stay as they were.
		try run("file-store-write", "standard", "volume", "int:3")
		#expect(try run("file-store-read", "standard", "volume").lines == ["int:3"])
		#expect(try Data(contentsOf: folder.file(try #require(asides.first))) == garbage)
	}

	@Test func anExitInTheMiddleOfTheWriteBehindFlushStillPersistsTheWrite() throws {
		// A large file makes the flush take long enough for the exit to land inside it.
		let file = folder.file("large.plist")
		let seed = Dictionary(uniqueKeysWithValues: (0..<20_000).map { ("seed-\($0)", $0) })
		try PropertyListSerialization.data(fromPropertyList: seed, format: .binary, options: 0).write(to: file)
		for pause in stride(from: 90_000, through: 190_000, by: 20_000) {
			try run("file-store-write-then-exit", file.path, "exit-\(pause)", "\(pause)")
		}
		let values = try parse(file)
		for pause in stride(from: 90_000, through: 190_000, by: 20_000) {
			#expect(values["exit-\(pause)"] as? Int == 42, "the write before an exit after \(pause) µs")
		}
		#expect(values.count == 20_006)
	}

	@Test func aFileTheStoreCannotReadIsNeverReplaced() throws {
		// As root, the child drops to `nobody`; otherwise the file is made unreadable to its owner.
		let shared = try TemporaryDirectory.reachableByEveryUser()
		chmod(shared.url.path, 0o777)
		let file = shared.file("settings.plist")
		let original = try PropertyListSerialization.data(
			fromPropertyList: ["a": 1, "b": 2, "c": 3], format: .xml, options: 0)
		try original.write(to: file)
		chmod(file.path, getuid() == 0 ? 0o600 : 0o000)
		defer { chmod(file.path, 0o600) }

		let result = try run("file-store-write-as-nobody", file.path, "mine")
		#expect(result.lines.contains("flushed false"), "\(result)")
		#expect(result.lines.contains { $0.hasPrefix("failure storage:") && $0.contains("could not be read") })
		chmod(file.path, 0o600)
		#expect(try Data(contentsOf: file) == original)
	}

	/// The documented "within about a second" is how the store hears of the change (its inotify watch of the file's
	/// folder, or a check every second where there is none), checked in-process in
	/// `FileStoreTests.anotherWritersChangesAreSeenWithoutAFlush`; here the other process hears it by itself, untimed:
	/// on a busy machine (the thread sanitizer's pass) the watcher may wait past a second to be scheduled.
	@Test func anotherProcessSeesAChangeWithoutFlushing() async throws {
		let file = folder.file("watched.plist")
		let store = Defaults.FileStore.at(file)
		try store.write(1, forKey: "seen")
		#expect(store.flush())
		// The watcher keeps no clock: it waits for the value, or for `giveUp`, which the wait creates at its limit.
		let giveUp = folder.file("give-up")
		let watcher = try ChildProcess(["file-store-await", file.path, "seen", "int:2", giveUp.path])
		defer { watcher.stopIfRunning() }
		// Generous: under the thread sanitizer, beside its stress tests, 20 s passed without it once.
		try #require(try await watcher.waitForOutput("ready", timeout: 40), "\(watcher.standardErrorSoFar)")
		try store.write(2, forKey: "seen")
		#expect(store.flush())
		// The limit is for a watcher that never hears it; a passing test returns as soon as it has.
		let result = try await watcher.wait(timeout: TimeInterval(30 * sanitizerSlowdown), givingUpBy: giveUp)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["ready", "seen"], "\(result)")
	}
}
