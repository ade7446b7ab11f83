import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// What an app meets when its resources run out or its process ends: standard error that takes no more, no
/// descriptor left, a lock held by another process at exit.
@Suite(.scaledTimeLimit(minutes: 1)) struct FileStoreEndingTests {
	let folder: TemporaryDirectory

	init() throws {
		folder = try TemporaryDirectory()
	}

	/// Runs `script` with `sh -c`, `$HELPER` naming the test helper.
	func shell(_ script: String) throws -> ChildProcess.Result {
		let environment = folder.configEnvironment.merging(["HELPER": try ChildProcess.helperURL().path]) { _, new in
			new
		}
		return try ChildProcess.run(["-c", script], executable: "/bin/sh", environment: environment)
	}

	@Test(arguments: ["2>&-", "2>/dev/full"])
	func theDefaultFailureHandlerSurvivesStandardErrorThatTakesNothing(redirection: String) throws {
		let corrupt = folder.file("corrupt.plist")
		try Data("not a property list".utf8).write(to: corrupt)
		// The store reports the corrupt file through the default handler, to a closed standard error or a full disk.
		let result = try shell("exec \"$HELPER\" file-store-open '\(corrupt.path)' \(redirection)")
		#expect(!result.wasSignaled && result.status == 0, "\(result)")
		#expect(result.lines == ["0"], "\(result)")
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		#expect(names.contains { $0.hasPrefix("corrupt.plist.corrupt-") }, "\(names)")
	}

	@Test func anAppAtItsDescriptorLimitSurvivesAnotherProcesssWrite() throws {
		let url = folder.file("limit.plist")
		let marker = folder.file("descriptors-back")
		let store = Defaults.FileStore.at(url)
		store.setStoredValue(1, forKey: "k")
		#expect(store.flush())
		let child = try ChildProcess(["file-store-reload-at-descriptor-limit", url.path, "k", marker.path])
		defer { child.kill() }
		#expect(waitUntil { child.standardOutputSoFar.contains("exhausted") || !child.isRunning })
		// The child hears the write and cannot read the file: it says so, and goes on.
		store.setStoredValue(2, forKey: "k")
		#expect(store.flush())
		#expect(
			waitUntil { child.standardErrorSoFar.contains("Too many open files") || !child.isRunning },
			"\(child.standardErrorSoFar)")
		#expect(child.isRunning, "the child ended when it heard the write at its descriptor limit")
		// With descriptors again, it takes in the next write.
		#expect(FileManager.default.createFile(atPath: marker.path, contents: nil))
		#expect(waitUntil { child.standardOutputSoFar.contains("released") || !child.isRunning })
		store.setStoredValue(3, forKey: "k")
		#expect(store.flush())
		let result = try child.wait(timeout: 30)
		#expect(!result.wasSignaled && result.status == 0, "\(result)")
		#expect(result.lines.last == "reloaded int:3", "\(result)")
	}

	@Test func anExitThatCannotWriteSaysWhichChangesAreLost() throws {
		let url = folder.file("held.plist")
		let lock = open(folder.file(".held.plist.lock").path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
		#expect(lock >= 0)
		defer { close(lock) }
		#expect(flock(lock, LOCK_EX) == 0)
		let result = try ChildProcess.run(["file-store-write-then-exit", url.path, "kept", "0"], timeout: 30)
		#expect(!result.wasSignaled && result.status == 0, "\(result)")
		let lines = result.standardError.split(separator: "\n")
		#expect(lines.last?.contains("the changes to the key \"kept\" are lost") == true, "\(result)")
		#expect(!result.standardError.contains("at the next try"), "\(result)")
		// One try of 2 s for the exit, not one per exit handler. Every wait for the lock that runs out says so on
		// standard error (the helper reports failures there), so the waits are counted, not timed: a busy machine's
		// slow start would look like another wait.
		let waits = lines.filter { $0.contains("stayed locked by another process for 2.0 seconds") }
		#expect(waits.count == 1, "\(result)")
		#expect(waits.first?.contains("the process is ending, so no later try will write the changes") == true)
		#expect(!FileManager.default.fileExists(atPath: url.path))
	}
}
