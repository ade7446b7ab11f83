import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// Termination signals under load, in child processes: a storm of them, an exit racing the termination flush,
/// writes during it, closed standard descriptors and `fork()`. The process must end by the signal, with what it
/// wrote on disk, and never hang.
@Suite(.scaledTimeLimit(minutes: 2)) struct FileStoreSignalTests {
	let folder: TemporaryDirectory

	init() throws {
		folder = try TemporaryDirectory()
	}

	func values(_ url: URL) throws -> [String: Any] {
		try PropertyListFile.decode(Data(contentsOf: url))
	}

	@Test func aStormOfSIGTERMDuringASlowFlushEndsTheProcessBySIGTERM() throws {
		let file = folder.file("storm.plist")
		let child = try ChildProcess(["signal-storm-during-flush", file.path])
		defer { child.kill() }
		#expect(waitUntil(seconds: 15) { child.standardOutputSoFar.contains("ready") })
		// The test holds the file's lock, so the child's flush waits (up to 2 s) with its flush lock taken.
		let lock = open(folder.file(".storm.plist.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
		defer { close(lock) }
		#expect(flock(lock, LOCK_EX) == 0)
		usleep(100_000)
		let stormEnd = Date().addingTimeInterval(1.5)
		var sent = 0
		while Date() < stormEnd, child.isRunning {
			child.kill(SIGTERM)
			sent += 1
		}
		flock(lock, LOCK_UN)
		let result = try child.wait(timeout: 15)
		#expect(result.wasSignaled && result.status == SIGTERM, "\(result) after \(sent) signals")
		#expect(try values(file)["round"] is Int)
	}

	@Test func whatTheAppWroteBeforeTheSignalIsOnDisk() throws {
		for attempt in 0..<3 {
			let file = folder.file("writes-\(attempt).plist")
			let progress = folder.file("progress-\(attempt)")
			let child = try ChildProcess(["signal-during-writes", file.path, progress.path])
			defer { child.kill() }
			#expect(waitUntil(seconds: 15) { child.standardOutputSoFar.contains("ready") })
			usleep(50_000)
			child.kill(SIGTERM)
			let result = try child.wait(timeout: 15)
			#expect(result.wasSignaled && result.status == SIGTERM, "\(result)")
			let written = try Data(contentsOf: progress).withUnsafeBytes { $0.loadUnaligned(as: Int.self) }
			let stored = try values(file)["round"] as? Int ?? 0
			#expect(
				stored >= written,
				"the last write that returned was round \(written); the file has \(stored): \(result)")
		}
	}

	@Test func anExitRacingTheTerminationFlushStillEndsBySIGTERMWithEverythingWritten() throws {
		for attempt in 0..<6 {
			let file = folder.file("exit-\(attempt).plist")
			let marker = folder.file("signal-sent-\(attempt)")
			let child = try ChildProcess(["signal-then-exit", file.path, marker.path])
			defer { child.kill() }
			#expect(waitUntil(seconds: 15) { child.standardOutputSoFar.contains("ready") })
			child.kill(SIGTERM)
			_ = FileManager.default.createFile(atPath: marker.path, contents: nil)
			let result = try child.wait(timeout: 15)
			#expect(result.wasSignaled && result.status == SIGTERM, "attempt \(attempt): \(result)")
			#expect(try values(file).count == 20_000)
		}
	}

	@Test func withStandardDescriptorsClosedTheTerminationPipeStaysAbove2() throws {
		let file = folder.file("closed.plist")
		let report = folder.file("report")
		let helper = try ChildProcess.helperURL().path
		let command =
			"exec "
			+ [helper, "signal-with-closed-standard-descriptors", file.path, report.path]
			.map(ToolRunner.shellQuoted).joined(separator: " ") + " <&- >&- 2>&-"
		let child = try ChildProcess(["-c", command], executable: "/bin/sh")
		defer { child.kill() }
		// The report is complete once it has its two lines.
		var reported = ""
		#expect(
			waitUntil(seconds: 15) {
				reported = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
				return reported.split(separator: "\n").count == 2 || !child.isRunning
			})
		#expect(reported == "pipes below 3: []\nwatch or settings files below 3: []\n")
		// Bytes written to descriptors 0-2 were not taken for signals. The child wrote them before its report: had one
		// been taken, the termination pipe's reader would have read it before the byte SIGTERM's handler writes now,
		// and the process would already be gone or end by that other signal.
		child.kill(SIGTERM)
		let result = try child.wait(timeout: 15)
		#expect(result.wasSignaled && result.status == SIGTERM, "\(result)")
		#expect(try values(file)["k"] as? Int == 7)
	}

	/// Not under the thread sanitizer (`.ci/tsan` says so in the environment): its runtime does not support a
	/// multi-threaded process that forks without exec, and there the forked child ignored SIGTERM and outlived the run.
	@Test(
		.disabled(
			if: runsUnderThreadSanitizer,
			"the thread sanitizer does not support fork without exec in a multi-threaded process"))
	func sigtermToAForkedChildEndsTheChildAndSparesTheParent() throws {
		let file = folder.file("forked.plist")
		let parent = try ChildProcess(["signal-after-fork", file.path])
		defer { parent.kill() }
		var childID: pid_t?
		#expect(
			waitUntil(seconds: 15) {
				let lines = parent.standardOutputSoFar.split(separator: "\n")
				childID = lines.lazy.compactMap { pid_t($0.dropFirst("child ".count)) }.first
				return (childID != nil && lines.contains { $0.hasPrefix("child flushed") }) || !parent.isRunning
			})
		#expect(parent.standardOutputSoFar.contains("child flushed true"), "\(parent.standardOutputSoFar)")
		let child = try #require(childID)
		defer {
			// Only while the parent has not reaped it: after "child signaled" its pid may belong to anyone.
			if !parent.standardOutputSoFar.contains("child signaled") {
				_ = Foundation.kill(child, SIGKILL)
			}
		}
		#expect(Foundation.kill(child, SIGTERM) == 0)
		#expect(waitUntil(seconds: 15) { parent.standardOutputSoFar.contains("child signaled") || !parent.isRunning })
		#expect(parent.standardOutputSoFar.contains("child signaled \(SIGTERM)"), "\(parent.standardOutputSoFar)")
		// The parent must survive its child's SIGTERM. Had the child's handler written the signal to the pipe it shares
		// with the parent, it did so before it ended, so before "child signaled": the parent's reader would take that
		// SIGTERM before the SIGHUP sent now, and the parent would end by SIGTERM (or be gone already).
		parent.kill(SIGHUP)
		let result = try parent.wait(timeout: 15)
		#expect(
			result.wasSignaled && result.status == SIGHUP, "the parent must end by the SIGHUP sent to it: \(result)")
		let stored = try values(file)
		#expect(stored["parent"] as? Int == 1)
		#expect(stored["child"] as? Int == 2)
	}
}
