import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// Files and folders the store must leave alone: folders it was not asked to create, link chains it cannot resolve,
/// files too large to be settings, suite names too long for their side files.
@Suite struct FileStoreBoundaryTests {
	let folder: TemporaryDirectory

	init() throws {
		folder = try TemporaryDirectory()
	}

	@Test func openingAndReadingCreateNoFolderAndTheFirstWriteMakesItPrivate() throws {
		let top = folder.file("missing")
		let url = top.appending(path: "deeper/app.plist")
		let store = Defaults.FileStore.at(url)
		#expect(store.storedValue(forKey: "k") == nil)
		#expect(store.flush())
		#expect(!FileManager.default.fileExists(atPath: top.path), "opening or reading created a folder")
		store.setStoredValue(1, forKey: "k")
		#expect(store.flush())
		for made in [top, top.appending(path: "deeper")] {
			var status = stat()
			#expect(stat(made.path, &status) == 0)
			#expect(status.st_mode & 0o777 == 0o700, "\(made.path) is \(String(status.st_mode & 0o777, radix: 8))")
		}
	}

	@Test(.enabled(if: geteuid() == 0, "only root creates folders for another user"))
	func aFolderCreatedByRootBelongsToItsParentsOwner() throws {
		let folder = try TemporaryDirectory.reachableByEveryUser()
		#expect(chown(folder.url.path, 65_534, 65_534) == 0)
		let made = folder.file("config")
		let store = Defaults.FileStore.at(made.appending(path: "app.plist"))
		#expect(!FileManager.default.fileExists(atPath: made.path), "opening created a folder")
		store.setStoredValue(1, forKey: "k")
		#expect(store.flush())
		var status = stat()
		#expect(stat(made.path, &status) == 0)
		#expect(status.st_uid == 65_534 && status.st_gid == 65_534 && status.st_mode & 0o777 == 0o700)
		#expect(stat(made.appending(path: "app.plist").path, &status) == 0 && status.st_uid == 65_534)
	}

	@Test func aChainOfLinksPastTheLimitIsNeverOverwritten() throws {
		let end = folder.file("end.plist")
		let original = try PropertyListSerialization.data(
			fromPropertyList: ["precious": "KEEP"], format: .binary, options: 0)
		try original.write(to: end)
		for index in (0..<100).reversed() {
			let destination = index == 99 ? "end.plist" : "link-\(index + 1)"
			try FileManager.default.createSymbolicLink(
				atPath: folder.file("link-\(index)").path, withDestinationPath: destination)
		}
		FailureRecorder.start()
		let store = Defaults.FileStore.at(folder.file("link-0"))
		store.setStoredValue("lost?", forKey: "written")
		#expect(!store.flush())
		store.discardPendingChanges()
		#expect(try Data(contentsOf: end) == original)
		for index in 0..<100 {
			var status = stat()
			#expect(lstat(folder.file("link-\(index)").path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK)
		}
		#expect(try PropertyListFile.decode(Data(contentsOf: end))["precious"] as? String == "KEEP")
	}

	@Test func aLoopOfLinksIsNeverOverwritten() throws {
		try FileManager.default.createSymbolicLink(atPath: folder.file("a.plist").path, withDestinationPath: "b.plist")
		try FileManager.default.createSymbolicLink(atPath: folder.file("b.plist").path, withDestinationPath: "a.plist")
		let store = Defaults.FileStore.at(folder.file("a.plist"))
		store.setStoredValue(1, forKey: "k")
		#expect(!store.flush())
		store.discardPendingChanges()
		for name in ["a.plist", "b.plist"] {
			var status = stat()
			#expect(lstat(folder.file(name).path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK, "\(name)")
		}
	}

	@Test func aFileFarLargerThanAnySettingsIsReadWithABoundAndKeptAside() throws {
		// The kernel's page map of the reading process: gigabytes, although `stat` says 0 bytes.
		let link = folder.file("pagemap.plist")
		try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "/proc/self/pagemap")
		let result = try ChildProcess.run(["file-store-open", link.path], timeout: 20)
		#expect(!result.wasSignaled && result.status == 0 && result.lines == ["0"], "\(result)")
		#expect(result.standardError.contains("more than 64 MiB"), "\(result)")
		var status = stat()
		#expect(lstat(link.path, &status) == 0 && status.st_mode & S_IFMT == S_IFLNK)
	}

	@Test func aValidFileOverTheSizeLimitIsKeptAsideWithItsBytes() throws {
		let url = folder.file("huge.plist")
		try Self.writeSparsePropertyList(dataBytes: SettingsFile.maximumByteCount, to: url)
		let size = try #require(FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int)
		FailureRecorder.start()
		let store = Defaults.FileStore.at(url)
		#expect(store.storedKeys().isEmpty)
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		let aside = try #require(names.first { $0.hasPrefix("huge.plist.corrupt-") }, "\(names)")
		#expect(try FileManager.default.attributesOfItem(atPath: folder.file(aside).path)[.size] as? Int == size)
		#expect(FailureRecorder.failures(forKey: "").contains { $0.message.contains("64 MiB") })
	}

	/// A change that would take the file past the most a settings file may hold is refused, both when the file is
	/// written from memory's tables (nobody changed it since this store read it) and when it is merged with a file
	/// another writer changed: the file keeps its bytes, no temporary file is left, the failure says why, the value
	/// stays in memory, pending. No timed retry writes up to 64 MiB again to the same refusal of this process's own
	/// values (the next write flushes); with another process's values merged in, which may shrink without a write
	/// here, the retry comes.
	@Test(arguments: [false, true])
	func aChangeThatWouldTakeTheFilePastTheLimitLeavesTheFileAsItWas(fileChangedMeanwhile: Bool) throws {
		let url = folder.file("app.plist")
		// Stores of their own, as two processes have, without a watcher: this store takes in the other's change only
		// when it flushes, and flushes only when told to (no scheduled flush runs beside the ones this test makes).
		let store = try Self.unwatchedStore(at: url)
		store.setStoredValue(1, forKey: "small")
		#expect(store.flush())
		if fileChangedMeanwhile {
			let other = try Self.unwatchedStore(at: url)
			other.setStoredValue(2, forKey: "other")
			#expect(other.flush())
		}
		let before = try Data(contentsOf: url)
		FailureRecorder.start()
		let key = uniqueKeyName("huge")
		store.memory.withLock { $0.isFlushScheduled = true }
		store.setStoredValue(Data(count: SettingsFile.maximumByteCount), forKey: key)
		#expect(!store.flush())
		#expect(try Data(contentsOf: url) == before)
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		#expect(names.sorted() == [".app.plist.lock", "app.plist"], "\(names)")
		#expect(
			FailureRecorder.failures(mentioning: url.path).contains { $0.message.contains("64 MiB") },
			"\(FailureRecorder.failures(mentioning: url.path))")
		let retry = store.memory.withLock { ($0.failedFlushes, $0.isFlushScheduled) }
		#expect(retry == (fileChangedMeanwhile ? 1 : 0, fileChangedMeanwhile), "\(retry)")
		#expect((store.storedValue(forKey: key) as? Data)?.count == SettingsFile.maximumByteCount)
		store.memory.withLock { $0.isFlushScheduled = true }
		store.removeStoredValue(forKey: key)
		#expect(store.flush())
		#expect(store.storedValue(forKey: "other") as? Int == (fileChangedMeanwhile ? 2 : nil))
	}

	/// A change refused as too large waits for no timer, but another process's change of the file may make room for
	/// it: the change is flushed when the store takes in the file (what its watcher does), and reaches the file.
	@Test func aChangeRefusedAsTooLargeIsFlushedOnceAnotherProcessMadeRoom() throws {
		let url = folder.file("app.plist")
		let other = try Self.unwatchedStore(at: url)
		other.setStoredValue(Data(count: 40 << 20), forKey: "big")
		#expect(other.flush())
		let store = try Self.unwatchedStore(at: url)
		#expect((store.storedValue(forKey: "big") as? Data)?.count == 40 << 20)
		store.memory.withLock { $0.isFlushScheduled = true }
		store.setStoredValue(Data(count: 30 << 20), forKey: "mine")
		#expect(!store.flush())
		#expect(store.memory.withLock { $0.isFlushScheduled } == false)

		other.memory.withLock { $0.isFlushScheduled = true }
		other.removeStoredValue(forKey: "big")
		#expect(other.flush())
		store.reloadIfChanged()
		#expect(store.memory.withLock { $0.isFlushScheduled }, "no flush after the other process made room")
		#expect(waitUntil(seconds: 20) { !store.hasPendingChangesOnceNoFlushIsUnderWay })
		let reader = try Self.unwatchedStore(at: url)
		#expect((reader.storedValue(forKey: "mine") as? Data)?.count == 30 << 20)
		#expect(reader.storedValue(forKey: "big") == nil)
	}

	/// A store of `url` of its own, without the watcher `FileStore.at` gives, whose writes schedule no flush.
	static func unwatchedStore(at url: URL) throws -> Defaults.FileStore {
		var failures: [Defaults.Failure] = []
		let store = Defaults.FileStore(file: SettingsFile(url: url), failures: &failures)
		#expect(failures.isEmpty, "\(failures)")
		store.memory.withLock { $0.isFlushScheduled = true }
		return store
	}

	/// A binary property list `{ d = <dataBytes zero bytes> }`, mostly a hole in the file so that it costs no disk.
	static func writeSparsePropertyList(dataBytes: Int, to url: URL) throws {
		var head: [UInt8] = Array("bplist00".utf8)
		head += [0xD1, 1, 2, 0x51, UInt8(ascii: "d"), 0x4F, 0x13]
		head += withUnsafeBytes(of: UInt64(dataBytes).bigEndian, Array.init)
		let tableOffset = head.count + dataBytes
		var tail: [UInt8] = []
		for offset in [8, 11, 13] {
			tail += withUnsafeBytes(of: UInt64(offset).bigEndian, Array.init)
		}
		tail += [0, 0, 0, 0, 0, 0, 8, 1]
		tail += withUnsafeBytes(of: UInt64(3).bigEndian, Array.init)
		tail += withUnsafeBytes(of: UInt64(0).bigEndian, Array.init)
		tail += withUnsafeBytes(of: UInt64(tableOffset).bigEndian, Array.init)
		let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
		defer { close(descriptor) }
		#expect(write(descriptor, head, head.count) == head.count)
		#expect(pwrite(descriptor, tail, tail.count, off_t(tableOffset)) == tail.count)
	}

	@Test func suiteNamesTooLongForTheirSideFilesAreRefusedUpFront() throws {
		let longest = String(repeating: "n", count: Defaults.FileStore.maximumSuiteNameBytes)
		let store = try Defaults.FileStore.suite(named: longest, in: folder.url)
		store.setStoredValue(1, forKey: "k")
		#expect(store.flush())
		for count in [Defaults.FileStore.maximumSuiteNameBytes + 1, 227, 249] {
			#expect(throws: Defaults.FileStore.InvalidSuiteName.self) {
				try Defaults.FileStore.url(forSuiteNamed: String(repeating: "n", count: count))
			}
		}
		do {
			_ = try Defaults.FileStore.url(forSuiteNamed: String(repeating: "é", count: 120))
			Issue.record("240 bytes of UTF-8 passed")
		} catch {
			#expect(error.description.contains("bytes"), "\(error)")
		}
	}

	@Test func storesDoNotKeepADescriptorOpenEach() throws {
		let stores = (0..<200).map { Defaults.FileStore.at(folder.file("suite-\($0).plist")) }
		for store in stores {
			store.setStoredValue(1, forKey: "k")
			#expect(store.flush())
		}
		let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
		let held = descriptors.filter { descriptor in
			let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor)
			return target?.hasPrefix(folder.url.path(percentEncoded: false)) == true
		}
		#expect(held.count < 10, "\(held.count) descriptors held in the stores' folder")
	}

	@Test func aStoreThatCouldNotReadItsFileAtLaunchReadsItBeforeItsFirstWrite() throws {
		// Not readable at launch (a FIFO, as a file can be for a moment: a permission race, too many open files).
		let url = folder.file("late.plist")
		#expect(mkfifo(url.path, 0o600) == 0)
		let store = Defaults.FileStore.at(url)
		store.setStoredValue("mine", forKey: "written")
		#expect(!store.flush())
		// Readable again, holding values the store has never seen.
		#expect(unlink(url.path) == 0)
		try PropertyListSerialization.data(fromPropertyList: ["kept": "theirs"], format: .binary, options: 0)
			.write(to: url)
		#expect(store.flush())
		let values = try PropertyListFile.decode(Data(contentsOf: url))
		#expect(values["kept"] as? String == "theirs" && values["written"] as? String == "mine")
	}

	@Test func aVersionNotReadMatchesNothingNotEvenItself() {
		#expect(!FileVersion.unknown.isSame(as: .unknown))
		#expect(!FileVersion.unknown.isSame(as: .missing))
		#expect(FileVersion.missing.isSame(as: .missing))
	}

	@Test func aStoreWhoseFolderIsMissingHearsTheFileAnotherProgramCreates() throws {
		let later = folder.file("later")
		let url = later.appending(path: "app.plist")
		let store = Defaults.FileStore.at(url)
		#expect(store.storedValue(forKey: "k") == nil)
		try FileManager.default.createDirectory(at: later, withIntermediateDirectories: false)
		try PropertyListSerialization.data(fromPropertyList: ["k": 1], format: .binary, options: 0).write(to: url)
		#expect(waitUntil(seconds: 10) { store.storedValue(forKey: "k") as? Int == 1 })
	}
}
