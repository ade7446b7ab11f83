import Foundation
import Testing

@testable import Defaults

/// `Defaults.update` across processes sharing one settings file: each test starts `DefaultsTestHelper` children
/// that update at the same moment (they wait for a start file), then reads what they left.
@Suite(.scaledTimeLimit(minutes: 1)) struct UpdateProcessTests {
	let folder: TemporaryDirectory

	init() throws {
		folder = try TemporaryDirectory.inMemory()
	}

	/// Starts one child per argument list, lets them go together, and waits for all.
	func runTogether(_ argumentLists: [[String]], start: URL, executable: String = "DefaultsTestHelper") throws {
		let children = try argumentLists.map {
			try ChildProcess($0, executable: executable, environment: folder.configEnvironment)
		}
		#expect(FileManager.default.createFile(atPath: start.path, contents: nil))
		for child in children {
			let result = try child.wait(timeout: TimeInterval(45 * sanitizerSlowdown))
			#expect(result.status == 0 && !result.wasSignaled, "\(child.arguments): \(result)")
			#expect(result.standardOutput.isEmpty, "no failure reported: \(result)")
		}
	}

	@Test func eightProcessesIncrementingOneKeyAThousandTimesEndOnExactlyEightThousand() throws {
		let file = folder.file("counter.plist")
		let start = folder.file("start")
		try runTogether(
			(0..<8).map { _ in ["update-increment", file.path, "counter", "1000", start.path] }, start: start)
		#expect(try FileContents.values(of: file)["counter"] as? Int == 8_000)
	}

	@Test func aListAppendedToBySeveralProcessesEndsWithEveryElement() throws {
		let file = folder.file("list.plist")
		let start = folder.file("start")
		let processes = 4
		let count = 150
		try runTogether(
			(0..<processes).map { ["update-append", file.path, "list", "p\($0)", "\(count)", start.path] }, start: start
		)
		let list = try #require(try FileContents.values(of: file)["list"] as? [String])
		#expect(list.count == processes * count)
		for process in 0..<processes {
			// Every element, each once, and each process's in the order it appended them.
			let own = list.filter { $0.hasPrefix("p\(process)-") }
			#expect(own == (0..<count).map { "p\(process)-\($0)" })
		}
	}

	@Test func anUpdateInThisProcessSeesWhatAnotherProcessFlushed() throws {
		let file = folder.file("seen.plist")
		let store = Defaults.FileStore.at(file)
		let counter = Defaults.Key<Int>("counter", default: 0, suite: store)
		try Defaults.update(counter) { $0 += 1 }
		let start = folder.file("start")
		try runTogether([["update-increment", file.path, "counter", "10", start.path]], start: start)
		// Whether or not the watcher has taken the child's writes in yet, the update reads the file as it is.
		#expect(try Defaults.update(counter) { $0 += 1 } == 12)
		#expect(try FileContents.values(of: file)["counter"] as? Int == 12)
	}

	/// A process that used up its thread-specific keys before its first update gets an error from the update, not a
	/// trap (the key that marks a thread's update is made at the first update), and the file is left as it was.
	@Test func anUpdateInAProcessWithNoThreadSpecificKeyLeftThrowsInsteadOfTrapping() throws {
		let file = folder.file("keys.plist")
		let child = try ChildProcess(["update-without-thread-keys", file.path], environment: folder.configEnvironment)
		let result = try child.wait(timeout: TimeInterval(30 * sanitizerSlowdown))
		#expect(result.status == 0 && !result.wasSignaled, "\(result)")
		#expect(result.standardOutput.contains("error: "), "\(result)")
		#expect(result.standardOutput.contains("pthread_key_create failed"), "\(result)")
		#expect(!FileManager.default.fileExists(atPath: file.path))
	}
}

extension TemporaryDirectory {
	/// A fresh folder in memory (`/dev/shm`) where there is one, else under the temporary folder.
	///
	/// The process tests check that no update is lost, not the disk: in memory a durable write costs microseconds
	/// instead of milliseconds, so thousands of updates take a moment. Docs/Performance.md measures them on disk.
	static func inMemory() throws -> TemporaryDirectory {
		var isFolder: ObjCBool = false
		let hasMemoryFolder =
			FileManager.default.fileExists(atPath: "/dev/shm", isDirectory: &isFolder) && isFolder.boolValue
			&& access("/dev/shm", W_OK) == 0
		return try TemporaryDirectory(
			under: hasMemoryFolder ? URL(filePath: "/dev/shm", directoryHint: .isDirectory) : nil)
	}
}
