import Foundation
import Testing

@testable import Defaults

/// The property-list file store, within one process.
@Suite(.scaledTimeLimit(minutes: 1)) struct FileStoreTests {
	let folder: TemporaryDirectory
	let url: URL
	let store: Defaults.FileStore

	init() throws {
		folder = try TemporaryDirectory()
		url = folder.file("settings.plist")
		store = Defaults.FileStore.at(url)
	}

	/// The file as Foundation parses it, with the format it found.
	func fileContents() throws -> (values: [String: Any], format: PropertyListSerialization.PropertyListFormat) {
		var format = PropertyListSerialization.PropertyListFormat.xml
		let parsed = try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: &format)
		return (try #require(parsed as? [String: Any]), format)
	}

	/// Replaces the file the way another process of this package would: a whole new file renamed into place.
	func writeFileAsAnotherProcess(
		_ values: [String: Any], format: PropertyListSerialization.PropertyListFormat = .binary
	)
		throws
	{
		let data = try PropertyListSerialization.data(fromPropertyList: values, format: format, options: 0)
		try data.write(to: url, options: .atomic)
	}

	@Test func writtenValuesReadBackAtOnce() throws {
		try store.write(5, forKey: "count")
		try store.write(["a", "b"], forKey: "names")
		#expect(store.storedValue(forKey: "count") as? Int == 5)
		#expect(store.storedValue(forKey: "names") as? [String] == ["a", "b"])
		store.removeValue(forKey: "count")
		#expect(store.storedValue(forKey: "count") == nil)
		#expect(store.storedKeys() == ["names"])
		#expect(store.flush())
	}

	@Test func typedKeysWorkThroughTheStore() throws {
		let volume = Defaults.Key<Int>("volume", default: 3, suite: store)
		#expect(Defaults[volume] == 3)
		Defaults[volume] = 9
		#expect(Defaults[volume] == 9)
		#expect(store.flush())
		#expect(try fileContents().values["volume"] as? Int == 9)
	}

	@Test func flushWritesABinaryPropertyListWithEveryValue() throws {
		let date = Date(timeIntervalSinceReferenceDate: 700_000_000.123_456_7)
		try store.write(
			[
				"int": 42, "big": UInt64.max, "double": 1.1, "bool": true, "string": "text", "data": Data([1, 2, 3]),
				"date": date, "nested": ["list": [1, 2]],
			], forKey: "all")
		#expect(store.flush())
		let (values, format) = try fileContents()
		#expect(format == .binary)
		let all = try #require(try Defaults.PropertyList.normalize(values["all"] as Any) as? [String: Any])
		#expect(all["int"] as? Int == 42)
		#expect(all["big"] as? UInt64 == .max)
		#expect(all["double"] as? Double == 1.1)
		#expect(all["bool"] as? Bool == true)
		#expect(all["date"] as? Date == date)
	}

	@Test func aKeyWrittenAgainAfterAFlushIsWrittenByTheNextFlush() throws {
		// The store remembers the key it marked dirty last, to skip hashing it again; a flush must make it forget.
		let volume = Defaults.Key<Int>("volume", default: 3, suite: store)
		Defaults[volume] = 4
		Defaults[volume] = 5
		#expect(store.flush())
		#expect(try fileContents().values["volume"] as? Int == 5)
		Defaults[volume] = 6
		#expect(store.flush())
		#expect(try fileContents().values["volume"] as? Int == 6)
		Defaults.reset(volume)
		#expect(store.flush())
		#expect(try fileContents().values["volume"] == nil)
	}

	@Test func writesReachTheFileWithoutAFlush() throws {
		// The documented "within about 100 ms" is the delay the write-behind flush is scheduled with, checked as such:
		// how long it takes here depends on how busy the machine is.
		#expect(Defaults.FileStore.flushDelay == .milliseconds(100))
		try store.write("soon", forKey: "late")
		// No flush and no other write: only the write-behind flush can bring the value to the file. The limit is for
		// a hang; a passing test returns as soon as the file has it.
		#expect(waitUntil(seconds: Double(30 * sanitizerSlowdown)) { (try? fileContents().values["late"]) != nil })
		#expect(try fileContents().values["late"] as? String == "soon")
	}

	@Test func newFilesAreReadableByTheOwnerOnly() throws {
		try store.write(1, forKey: "a")
		#expect(store.flush())
		let permissions = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
		#expect(permissions == 0o600)
	}

	@Test func theSameFileGivesTheSameStore() throws {
		let spelledDifferently = folder.url.appending(path: "sub/../settings.plist")
		#expect(Defaults.FileStore.at(spelledDifferently) === store)
		#expect(try Defaults.FileStore.suite(named: "settings", in: folder.url) === store)
		#expect(Defaults.FileStore.at(folder.file("other.plist")) !== store)
	}

	@Test(arguments: ["", ".", "..", "../escape", "sub/dir", "/etc/passwd", "nul\u{0}name"])
	func suiteNamesThatLeaveTheFolderAreRefused(name: String) {
		#expect(throws: Defaults.FileStore.InvalidSuiteName.self) {
			try Defaults.FileStore.suite(named: name, in: folder.url)
		}
		#expect(throws: Defaults.FileStore.InvalidSuiteName.self) {
			try Defaults.FileStore.url(forSuiteNamed: name)
		}
	}

	@Test func aSuiteFileIsFoundWithoutOpeningIt() throws {
		let url = try Defaults.FileStore.url(forSuiteNamed: "never-opened")
		#expect(url == Defaults.FileStore.directory.appending(path: "never-opened.plist"))
		#expect(!FileManager.default.fileExists(atPath: url.path(percentEncoded: false)))
	}

	@Test func suiteNamesWithDotsStayInTheFolder() throws {
		let suite = try Defaults.FileStore.suite(named: "com.example.app", in: folder.url)
		#expect(suite.url.lastPathComponent == "com.example.app.plist")
		#expect(suite.url.deletingLastPathComponent().path == store.url.deletingLastPathComponent().path)
	}

	@Test(arguments: [PropertyListSerialization.PropertyListFormat.xml, .binary])
	func filesWrittenByOthersAreRead(format: PropertyListSerialization.PropertyListFormat) throws {
		let other = folder.file("foreign.plist")
		let data = try PropertyListSerialization.data(
			fromPropertyList: ["count": 7, "name": "x", "list": [1, 2]] as [String: Any], format: format, options: 0)
		try data.write(to: other)
		let foreign = Defaults.FileStore.at(other)
		#expect(foreign.storedValue(forKey: "count") as? Int == 7)
		#expect(foreign.storedValue(forKey: "name") as? String == "x")
		#expect(foreign.storedValue(forKey: "list") as? [Int] == [1, 2])
	}

	@Test func openStepFilesAreRead() throws {
		let other = folder.file("openstep.plist")
		try Data(#"{ name = "Ada"; tags = (a, b); }"#.utf8).write(to: other)
		let foreign = Defaults.FileStore.at(other)
		#expect(foreign.storedValue(forKey: "name") as? String == "Ada")
		#expect(foreign.storedValue(forKey: "tags") as? [String] == ["a", "b"])
	}

	@Test func registeredDefaultsAreReadBeneathStoredValuesAndNeverWritten() throws {
		store.registerDefaultValues(["fallback": 1, "shadowed": 2])
		try store.write(3, forKey: "shadowed")
		#expect(store.storedValue(forKey: "fallback") as? Int == 1)
		#expect(store.storedValue(forKey: "shadowed") as? Int == 3)
		store.removeValue(forKey: "shadowed")
		#expect(store.storedValue(forKey: "shadowed") as? Int == 2)
		try store.write(0, forKey: "written")
		#expect(store.flush())
		#expect(try fileContents().values.keys.sorted() == ["written"])
		#expect(store.storedKeys() == ["written"])
	}

	@Test func launchArgumentsAreParsedAsPropertyListValues() {
		let domain = Defaults.FileStore.argumentDomain(from: [
			"/usr/bin/app", "-name", "Ada", "-list", "(a, b)", "--verbose", "-count", "<integer>5</integer>",
			"-words", "two words", "-dangling",
		])
		#expect(domain["name"] as? String == "Ada")
		#expect(domain["list"] as? [String] == ["a", "b"])
		#expect(domain["count"] as? Int == 5)
		#expect(domain["words"] as? String == "two words")
		#expect(domain["verbose"] == nil)
		#expect(domain["dangling"] == nil)
	}

	@Test func launchArgumentsAreReadAboveStoredValuesAndRegisteredOnes() throws {
		store.registerDefaultValues(["a": "registered", "b": "registered"])
		store.setArguments(["a": "argument", "c": "argument"])
		try store.write("stored", forKey: "c")
		#expect(store.storedValue(forKey: "a") as? String == "argument")
		#expect(store.storedValue(forKey: "b") as? String == "registered")
		#expect(store.storedValue(forKey: "c") as? String == "argument")
		#expect(store.storedKeys() == ["c"])
		#expect(store.flush())
		#expect(try fileContents().values as NSDictionary == ["c": "stored"] as NSDictionary)
	}

	@Test func anotherWritersKeysAreKeptAndTakenInAtFlush() throws {
		try store.write("mine", forKey: "shared")
		try store.write(1, forKey: "own")
		#expect(store.flush())
		// Another process changes one key we wrote and adds one.
		try writeFileAsAnotherProcess(["shared": "theirs", "own": 1, "their": 2])
		try store.write(10, forKey: "own")
		#expect(store.flush())
		let values = try fileContents().values
		#expect(values["their"] as? Int == 2)
		#expect(values["shared"] as? String == "theirs")
		#expect(values["own"] as? Int == 10)
		#expect(store.storedValue(forKey: "their") as? Int == 2)
		#expect(store.storedValue(forKey: "shared") as? String == "theirs")
	}

	@Test func removalsAreMergedLikeWrites() throws {
		try store.write(1, forKey: "gone")
		#expect(store.flush())
		try writeFileAsAnotherProcess(["gone": 1, "their": 2])
		store.removeValue(forKey: "gone")
		#expect(store.flush())
		#expect(try fileContents().values.keys.sorted() == ["their"])
	}

	@Test func anotherWritersChangesAreSeenWithoutAFlush() throws {
		// The file is another process's from the start: a write here would schedule a write-behind flush, which reads
		// the file again and would take in the change below without the watch.
		try writeFileAsAnotherProcess(["a": 1])
		store.reloadIfChanged()
		#expect(store.storedValue(forKey: "a") as? Int == 1)
		#if os(Linux)
			// Heard through the inotify watch of the file's folder, not the once-a-second check of the file's identity
			// (which would see the change too, only later): the watch is checked rather than how soon it came.
			let watcher = try #require(InotifyWatcher.shared)
			#expect(watcher.isWatching(folder: SettingsFile(url: url).folderPath))
		#endif
		try writeFileAsAnotherProcess(["a": 1, "b": "new"])
		// The limit is for a hang; a passing test returns as soon as the store has the value.
		#expect(waitUntil(seconds: Double(30 * sanitizerSlowdown)) { store.storedValue(forKey: "b") != nil })
		#expect(store.storedValue(forKey: "b") as? String == "new")
	}

	@Test func unflushedWritesSurviveAReloadOfAnotherWritersChanges() throws {
		try store.write(1, forKey: "pending")
		try writeFileAsAnotherProcess(["pending": 0, "their": 2])
		store.reloadIfChanged()
		#expect(store.storedValue(forKey: "pending") as? Int == 1)
		#expect(store.storedValue(forKey: "their") as? Int == 2)
		#expect(store.flush())
		#expect(try fileContents().values["pending"] as? Int == 1)
	}

	/// Issue 32: once memory and the file agree (a flush with nothing left pending), the store forgets its copy of the
	/// file's values and keeps one dictionary; what it needed the copy for still works from memory: an outside edit is
	/// merged beside a change still pending here, and an atomic update writes over the file's values, never over a
	/// pending change.
	@Test func aFlushedStoreKeepsOneCopyOfItsValuesAndStillMergesOutsideEdits() throws {
		try store.write(1, forKey: "a")
		try store.write("x", forKey: "b")
		#expect(store.flush())
		#expect(store.disk.withLock { $0.persisted == nil })

		try store.write(2, forKey: "pending")
		try writeFileAsAnotherProcess(["a": 10, "b": "x", "their": 3])
		#expect(store.flush())
		var values = try fileContents().values
		#expect(values["a"] as? Int == 10)
		#expect(values["their"] as? Int == 3)
		#expect(values["pending"] as? Int == 2)
		#expect(store.storedValue(forKey: "a") as? Int == 10)
		#expect(store.storedValue(forKey: "their") as? Int == 3)
		#expect(store.disk.withLock { $0.persisted == nil })

		try writeFileAsAnotherProcess(["a": 10, "b": "y", "their": 3, "pending": 2])
		let counter = Defaults.Key<Int>("counter", default: 0, suite: store)
		try Defaults.update(counter) { $0 += 5 }
		values = try fileContents().values
		#expect(values["b"] as? String == "y")
		#expect(values["counter"] as? Int == 5)
		#expect(store.storedValue(forKey: "b") as? String == "y")
		#expect(store.storedValue(forKey: "counter") as? Int == 5)
		#expect(store.disk.withLock { $0.persisted == nil })
	}

	/// Issue 32: a flush while writes go on (a burst: keys written during the flush stay pending) keeps no copy of the
	/// file's values either, since memory's keys that are not pending hold them; the next flush writes the pending key.
	@Test func aWriteDuringAFlushLeavesOneCopyOfTheValues() throws {
		// No scheduled flush: this test's own flushes are the only ones. The flush below waits for the lock this test
		// holds until it has written "c", however long a busy machine takes to get there.
		store.memory.withLock { $0.isFlushScheduled = true }
		store.disk.withLock { $0.lockWaitLimit = .seconds(60) }
		try store.write(1, forKey: "a")
		#expect(store.flush())
		store.memory.withLock { $0.isFlushScheduled = true }
		try store.write(2, forKey: "b")
		// Another open file description of the lock file, as another process's: the flush waits for it once it has
		// taken the change of "b".
		let holder = open(folder.file(".settings.plist.lock").path, O_RDWR | O_CREAT, 0o600)
		#expect(holder >= 0)
		#expect(flock(holder, LOCK_EX) == 0)
		final class Outcome: @unchecked Sendable {
			var isWritten = false
		}
		let outcome = Outcome()
		let done = DispatchSemaphore(value: 0)
		let store = self.store
		DispatchQueue.global().async {
			outcome.isWritten = store.flush()
			done.signal()
		}
		#expect(waitUntil(seconds: Double(30 * sanitizerSlowdown)) { !store.hasPendingChanges })
		store.memory.withLock { $0.isFlushScheduled = true }
		try store.write(3, forKey: "c")
		flock(holder, LOCK_UN)
		close(holder)
		#expect(done.wait(timeout: .now() + .seconds(30 * sanitizerSlowdown)) == .success)
		#expect(outcome.isWritten)
		#expect(store.hasPendingChanges)
		#expect(store.disk.withLock { $0.persisted == nil })
		var values = try fileContents().values
		#expect(values["b"] as? Int == 2)
		#expect(values["c"] == nil)

		#expect(store.flush())
		values = try fileContents().values
		#expect(values["a"] as? Int == 1)
		#expect(values["c"] as? Int == 3)
		#expect(store.disk.withLock { $0.persisted == nil })
	}

	@Test func changedKeysAreOnlyThoseWhoseValuesDiffer() {
		let changed = Defaults.FileStore.changedKeys(
			from: ["same": 1, "changed": 1, "removed": 1, "list": [1, 2]],
			to: ["same": 1, "changed": 2, "added": 1, "list": [1, 2]])
		#expect(changed == ["changed", "removed", "added"])
	}

	@Test func corruptFilesAreMovedAsideWithTheirBytesIntact() throws {
		let garbage = Data("@@@ not a property list <<<".utf8)
		let broken = folder.file("broken.plist")
		try garbage.write(to: broken)
		let corrupt = Defaults.FileStore.at(broken)
		#expect(corrupt.storedKeys().isEmpty)
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		let asides = names.filter { $0.hasPrefix("broken.plist.corrupt-") }
		#expect(asides.count == 1)
		#expect(try Data(contentsOf: folder.file(try #require(asides.first))) == garbage)
		try corrupt.write(1, forKey: "fresh")
		#expect(corrupt.flush())
		#expect(try Data(contentsOf: folder.file(try #require(asides.first))) == garbage)
	}

	@Test func anEmptyFileIsAnEmptyStore() throws {
		let empty = folder.file("empty.plist")
		try Data().write(to: empty)
		#expect(Defaults.FileStore.at(empty).storedKeys().isEmpty)
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		#expect(!names.contains { $0.contains("corrupt") })
	}

	@Test func manyThreadsReadingAndWritingLoseNoWrite() async throws {
		await withTaskGroup(of: Void.self) { group in
			for worker in 0..<8 {
				group.addTask {
					for index in 0..<500 {
						store.setStoredValue(index, forKey: "worker-\(worker)-\(index % 50)")
						_ = store.storedValue(forKey: "worker-\((worker + 1) % 8)-\(index % 50)")
						if index % 100 == 0 {
							store.flush()
						}
						if index % 7 == 0 {
							store.removeValue(forKey: "scratch-\(worker)")
						} else {
							store.setStoredValue(index, forKey: "scratch-\(worker)")
						}
					}
				}
			}
		}
		#expect(store.flush())
		let values = try fileContents().values
		for worker in 0..<8 {
			for slot in 0..<50 {
				#expect(values["worker-\(worker)-\(slot)"] as? Int == 450 + slot)
				#expect(store.storedValue(forKey: "worker-\(worker)-\(slot)") as? Int == 450 + slot)
			}
		}
	}
}
