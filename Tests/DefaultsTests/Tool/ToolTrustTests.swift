import DefaultsTestSupport
import Foundation
import Testing

#if canImport(Glibc)
	import Glibc
#endif

/// What `defaults` must never destroy or half do: an import that fails part-way, an export over a device, a FIFO
/// or a link, output to a closed or broken pipe, a watch through a link, dates far from now, endless input.
@Suite(.scaledTimeLimit(minutes: 1)) struct ToolTrustTests {
	let tool: ToolRunner
	let seeded: [String: Any] = ["a": 1, "b": "two", "c": [true, 3.5]]

	init() throws {
		tool = try ToolRunner()
		try tool.seed("app", seeded)
	}

	/// Runs `script` with `sh -c`, `$DEFAULTS` naming the built command.
	func shell(_ script: String) throws -> ChildProcess.Result {
		let environment = tool.environment.merging(["DEFAULTS": try ChildProcess.helperURL(named: "defaults").path]) {
			_, new in new
		}
		return try ChildProcess.run(["-c", script], executable: "/bin/sh", environment: environment)
	}

	func mode(_ url: URL) -> mode_t {
		var status = stat()
		return lstat(url.path, &status) == 0 ? status.st_mode : 0
	}

	// MARK: import

	@Test func anImportWithAValueThatCannotBeStoredChangesNothing() throws {
		let input = tool.folder.file("nan.plist")
		try HostileFiles.nanDate.write(to: input)
		let before = try Data(contentsOf: tool.file("app"))
		let result = try tool.run("import", "app", input.path)
		#expect(result.status == 65, "\(result)")
		#expect(result.standardError.contains("nothing was imported"), "\(result)")
		#expect(try Data(contentsOf: tool.file("app")) == before)
	}

	@Test func importReadsAtMost64MiBOfStandardInput() throws {
		let result = try shell("head -c 100000000 /dev/zero | \"$DEFAULTS\" import app -")
		#expect(result.status == 65, "\(result)")
		#expect(result.standardError.contains("larger than 64 MiB"), "\(result)")
		#expect(try tool.contents(of: "app").count == 3)
	}

	@Test func aSignalDuringAnImportLeavesTheOldOrTheNewDomainWhole() throws {
		let count = 30_000
		func file(_ prefix: String) throws -> Data {
			let values = Dictionary(uniqueKeysWithValues: (0..<count).map { ("\(prefix)-\($0)", $0) })
			return try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
		}
		let old = try file("old")
		let input = tool.folder.file("new.plist")
		try file("new").write(to: input)
		// Signals at points spread over a whole import (about a second in a debug build): parsing, applying, flushing.
		try old.write(to: tool.file("big"))
		let start = Date()
		try tool.succeed("import", "big", input.path)
		let duration = Date().timeIntervalSince(start)
		for fraction in stride(from: 0.3, through: 1.0, by: 0.07) {
			let delay = UInt32(duration * fraction * 1_000_000)
			try old.write(to: tool.file("big"))
			let importing = try ChildProcess(
				[
					"exec-with-signals-unblocked", try ChildProcess.helperURL(named: "defaults").path, "import", "big",
					input.path,
				],
				environment: tool.environment)
			defer { importing.kill() }
			usleep(delay)
			importing.kill(SIGTERM)
			let result = try importing.wait(timeout: 30)
			#expect(result.status == 0 || (result.wasSignaled && result.status == SIGTERM), "\(result)")
			let keys = try tool.contents(of: "big").keys
			let prefixes = Set(keys.map { $0.prefix(while: { $0 != "-" }) })
			#expect(keys.count == count && prefixes.count == 1, "after \(delay) µs: \(keys.count) keys, \(prefixes)")
		}
	}

	// MARK: export and snapshot destinations

	@Test(arguments: [["export", "app"], ["snapshot", "app"]])
	func aFIFOAtTheDestinationIsRefusedAndKept(verb: [String]) throws {
		let fifo = tool.folder.file("out.fifo")
		#expect(mkfifo(fifo.path, 0o600) == 0)
		let result = try tool.run(verb + [fifo.path])
		#expect(result.status == 73, "\(result)")
		#expect(result.standardError.contains("a FIFO, not a regular file"), "\(result)")
		#expect(mode(fifo) & S_IFMT == S_IFIFO)
	}

	@Test(.enabled(if: geteuid() == 0, "only root makes device nodes"))
	func aDeviceAtTheDestinationIsRefusedAndKept() throws {
		// A node of the device /dev/null (character, major 1, minor 3, encoded as Linux does): one made in the test's folder stands in for /dev/full.
		let device = tool.folder.file("device")
		#expect(mknod(device.path, S_IFCHR | 0o600, dev_t(1 << 8 | 3)) == 0)
		for verb in ["export", "snapshot"] {
			let result = try tool.run(verb, "app", device.path)
			#expect(result.status == 73, "\(result)")
			#expect(result.standardError.contains("a character device, not a regular file"), "\(result)")
			#expect(mode(device) & S_IFMT == S_IFCHR)
		}
	}

	@Test func aFolderAtTheDestinationIsRefused() throws {
		let result = try tool.run("export", "app", tool.folder.url.path)
		#expect(result.status == 73, "\(result)")
		#expect(mode(tool.folder.url) & S_IFMT == S_IFDIR)
	}

	@Test(arguments: [["export", "app"], ["snapshot", "app"]])
	func aLinkAtTheDestinationIsKeptAndItsTargetReplaced(verb: [String]) throws {
		let targets = tool.folder.file("targets")
		try FileManager.default.createDirectory(at: targets, withIntermediateDirectories: true)
		let target = targets.appending(path: "out.plist")
		try Data("old".utf8).write(to: target)
		chmod(target.path, 0o640)
		let link = tool.folder.file("out.plist")
		try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "targets/out.plist")
		try tool.succeed(verb + [link.path])
		#expect(mode(link) & S_IFMT == S_IFLNK, "the link stays a link")
		#expect(mode(target) & 0o7777 == 0o640, "the target keeps its mode")
		let written = try PropertyListSerialization.propertyList(from: Data(contentsOf: target), format: nil)
		#expect((written as? [String: Any])?.count == 3)
	}

	@Test func anExportOverASetuidFileDropsTheSetuidAndSetgidBits() throws {
		let output = tool.folder.file("setuid.plist")
		try Data("old".utf8).write(to: output)
		#expect(chmod(output.path, 0o6750) == 0)
		try tool.succeed("export", "app", output.path)
		#expect(mode(output) & 0o7777 == 0o750)
	}

	@Test func aNewExportIsReadableByItsOwnerOnly() throws {
		let output = tool.folder.file("new.plist")
		try tool.succeed("export", "app", output.path)
		#expect(mode(output) & 0o7777 == 0o600)
		let leftovers = try FileManager.default.contentsOfDirectory(atPath: tool.folder.url.path).filter {
			$0.contains(".tmp-")
		}
		#expect(leftovers.isEmpty)
	}

	@Test(.enabled(if: geteuid() == 0, "the rule is root's"))
	func asRootALinkOfAnotherUserIsNotFollowed() throws {
		let target = tool.folder.file("root-owned.conf")
		try Data("precious".utf8).write(to: target)
		let link = tool.folder.file("planted.plist")
		try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
		// The link belongs to `nobody`, the folder to root.
		#expect(lchown(link.path, 65_534, 65_534) == 0)
		let result = try tool.run("export", "app", link.path)
		#expect(result.status == 73, "\(result)")
		#expect(result.standardError.contains("root does not follow such a link"), "\(result)")
		#expect(try Data(contentsOf: target) == Data("precious".utf8))
		#expect(mode(link) & S_IFMT == S_IFLNK)
	}

	@Test func exportKeepsWhatFoundationsXMLWriterLoses() throws {
		let values: [String: Any] = [
			"text": "a\rb\u{1}c & <d>", "negativeZero": -0.0, "infinite": Double.infinity,
			"largest": UInt64.max, "empty": ["list": [Any](), "map": [String: Any]()], "bytes": Data([0, 1, 255]),
		]
		let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
		try data.write(to: tool.file("special"))
		let exported = tool.folder.file("special-export.plist")
		try tool.succeed("export", "special", exported.path)
		try tool.succeed("import", "copy", exported.path)
		let copy = try tool.contents(of: "copy")
		#expect(copy["text"] as? String == "a\rb\u{1}c & <d>")
		#expect((copy["negativeZero"] as? Double)?.sign == .minus)
		#expect(copy["infinite"] as? Double == .infinity)
		#expect((copy["largest"] as? NSNumber)?.uint64Value == UInt64.max)
		#expect(copy["bytes"] as? Data == Data([0, 1, 255]))
		#expect((copy["empty"] as? [String: Any])?.count == 2)
	}

	// MARK: standard output

	@Test func aClosedStandardOutputEndsTheCommandWithAStatus() throws {
		let result = try shell("exec \"$DEFAULTS\" read app >&-")
		#expect(!result.wasSignaled && result.status == 74, "\(result)")
	}

	@Test func aBrokenPipeWithSIGPIPEIgnoredEndsTheCommandWithAStatus() throws {
		let result = try shell(
			"trap '' PIPE; { sleep 0.3; \"$DEFAULTS\" export app -; echo \"status $?\" >&2; } | true")
		#expect(result.standardError.contains("status 74"), "\(result)")
	}

	// MARK: watch

	@Test func watchOfALinkedDomainHearsEachChangeAtOnce() throws {
		let real = tool.folder.file("real")
		try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
		try FileManager.default.createSymbolicLink(
			atPath: tool.file("linked").path, withDestinationPath: "real/app.plist")
		try tool.succeed("write", real.appending(path: "app.plist").path, "level", "-int", "1")
		let watch = try tool.start("watch", "linked", "--count", "3", "--timeout", "30")
		defer { watch.kill() }
		#expect(waitUntil { watch.standardErrorSoFar.contains("Watching ") || !watch.isRunning })
		// Three changes about a second in all: the once-a-second check alone would see one or two of them.
		for level in 2...4 {
			try tool.succeed("write", "linked", "level", "-int", "\(level)")
			usleep(200_000)
		}
		let result = try watch.wait(timeout: 40)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["level = 2", "level = 3", "level = 4"])
		#expect(mode(tool.file("linked")) & S_IFMT == S_IFLNK)
	}

	// MARK: dates

	@Test func datesFarFromNowPrintTheSameInEveryNotation() throws {
		let dates: [String: Any] = [
			"past": Date.distantPast, "far": Date(timeIntervalSinceReferenceDate: 1e300),
			"late": Date(timeIntervalSinceReferenceDate: 252_460_800_000),
			"early": Date(timeIntervalSinceReferenceDate: -63_200_000_000),
		]
		let data = try PropertyListSerialization.data(fromPropertyList: dates, format: .binary, options: 0)
		try data.write(to: tool.file("dates"))
		let expected = [
			"early": "-0002-04-10", "far": "a date out of range (1e+300 seconds from 2001-01-01)",
			"late": "+10001-03-02", "past": "0000-12-30",
		]
		let read = try tool.succeed("read", "dates")
		let json = try tool.succeed("--json", "read", "dates")
		let exported = try tool.succeed("export", "dates", "-")
		for (key, text) in expected {
			#expect(read.contains("\(key) = \"\(text)"), "\(read)")
			#expect(json.contains("\"\(key)\": \"\(text)"), "\(json)")
			#expect(exported.contains("<date>\(text)"), "\(exported)")
			#expect(try tool.succeed("read", "dates", key).hasPrefix(text))
		}
		#expect(try tool.succeed("read", "dates", "past") == "0000-12-30 00:00:00 +0000\n")
	}

	// MARK: arguments and limits

	@Test func argumentsThatAreNotUTF8AreRefusedAndChangeNothing() throws {
		let before = try Data(contentsOf: tool.file("app"))
		try tool.seed("other\u{FFFD}", ["kept": 1])
		let other = try Data(contentsOf: tool.file("other\u{FFFD}"))
		for script in [
			"\"$DEFAULTS\" write app \"$(printf 'k\\376')\" first",
			"\"$DEFAULTS\" write \"$(printf 'app\\377')\" k v",
			"cd \"$XDG_CONFIG_HOME\" && \"$DEFAULTS\" delete \"./other$(printf '\\376').plist\"",
		] {
			let result = try shell(script)
			#expect(result.status == 64, "\(script): \(result)")
			#expect(result.standardError.contains("is not valid UTF-8"), "\(script): \(result)")
		}
		#expect(try Data(contentsOf: tool.file("app")) == before)
		#expect(try Data(contentsOf: tool.file("other\u{FFFD}")) == other)
	}

	@Test func aVerbFacingAHeldLockMakesOneTryAndSaysNoneFollows() throws {
		let lock = open(tool.folder.file(".app.plist.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
		#expect(lock >= 0)
		defer { close(lock) }
		#expect(flock(lock, LOCK_EX) == 0)
		let before = try Data(contentsOf: tool.file("app"))
		// One wait of `FileStore.updateLockWaitLimit` (10 s) and the process's start: far from the limit.
		let start = ContinuousClock.now
		let result = try tool.run(["delete", "app", "a"], timeout: 60)
		let duration = ContinuousClock.now - start
		#expect(result.status == 74, "\(result)")
		// A removal is one update under the file's lock, as a write is: one wait of the update's limit, and no
		// second try at exit, whose flush has nothing left to write. Every wait that runs out is reported, so they are
		// counted in what the tool says rather than timed (a busy machine's slow start would look like a second wait).
		let waits = result.standardError.components(separatedBy: "stayed locked by another process").count - 1
		#expect(waits == 1, "\(result)")
		#expect(result.standardError.contains("nothing was updated"), "\(result)")
		#expect(!result.standardError.contains("at the next try"), "\(result)")
		// A second wait that said nothing (a retry of the update) would not be counted above. Kept as a bound on time,
		// but one that a slow machine cannot reach: two waits of the update's limit take 20 s at the least whatever
		// the machine, since the lock is held throughout, while one leaves 10 s for the tool's start and exit.
		#expect(duration < .seconds(20), "delete took \(duration), more than one wait of 10 s")
		#expect(try Data(contentsOf: tool.file("app")) == before)
	}

	@Test(arguments: ["delete app a", "increment app a", "write app b -int 2", "watch app --timeout 0.5"])
	func aVerbAtALowDescriptorLimitEndsWithAMessageNotATrap(verb: String) throws {
		for limit in 4...9 {
			let before = try Data(contentsOf: tool.file("app"))
			let result = try shell("ulimit -n \(limit) && exec \"$DEFAULTS\" \(verb)")
			#expect(!result.wasSignaled && [0, 74].contains(result.status), "ulimit -n \(limit), \(verb): \(result)")
			if result.status == 74 {
				#expect(result.standardError.contains("Too many open files"), "\(result)")
				#expect(try Data(contentsOf: tool.file("app")) == before, "ulimit -n \(limit), \(verb)")
			}
			try tool.seed("app", seeded)
		}
	}
}
