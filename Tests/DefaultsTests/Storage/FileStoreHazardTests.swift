import Foundation
import Synchronization
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// What the file system and other processes can do to a settings file: links, FIFOs, a lock held forever, a write
/// as root, a termination signal. None of it may hang the app or lose its settings.
@Suite struct FileStoreHazardTests {
	let folder: TemporaryDirectory

	init() throws {
		folder = try TemporaryDirectory()
	}

	@Test func aSymlinkedFileIsWrittenThroughAndStaysALink() throws {
		let dotfiles = folder.file("dotfiles")
		try FileManager.default.createDirectory(at: dotfiles, withIntermediateDirectories: true)
		let target = dotfiles.appending(path: "app.plist")
		try PropertyListSerialization.data(fromPropertyList: ["kept": 1], format: .xml, options: 0).write(to: target)
		let config = folder.file("config")
		try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
		let link = config.appending(path: "app.plist")
		try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: "../dotfiles/app.plist")

		let store = Defaults.FileStore.at(link)
		#expect(store.storedValue(forKey: "kept") as? Int == 1)
		try store.write("new", forKey: "written")
		#expect(store.flush())
		#expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == "../dotfiles/app.plist")
		let values = try PropertyListFile.decode(Data(contentsOf: target))
		#expect(values["written"] as? String == "new")
		#expect(values["kept"] as? Int == 1)
		// One file, one store and one lock, whichever path reaches it.
		#expect(Defaults.FileStore.at(target) === store)
		let names = try FileManager.default.contentsOfDirectory(atPath: config.path)
		#expect(names == ["app.plist"], "nothing but the link beside the link: \(names)")
	}

	@Test func aFIFOAtTheSettingsPathIsRefusedWithoutBlocking() throws {
		let path = folder.file("fifo.plist").path
		#expect(mkfifo(path, 0o600) == 0)
		let opened = LockedState<Defaults.FileStore?>(nil)
		let done = DispatchSemaphore(value: 0)
		FailureRecorder.start()
		Thread {
			opened.withLock { $0 = Defaults.FileStore.at(URL(filePath: path)) }
			done.signal()
		}.start()
		guard done.wait(timeout: .now() + 10) == .success else {
			Issue.record("opening a store on a FIFO blocked")
			return
		}
		let store = try #require(opened.withLock { $0 })
		try store.write(1, forKey: "k")
		#expect(!store.flush())
		store.discardPendingChanges()
		var status = stat()
		#expect(lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "the FIFO was replaced")
		#expect(FailureRecorder.failures(forKey: "").contains { $0.message.contains("not a regular file") })
	}

	@Test func aFlushGivesUpOnALockHeldElsewhereKeepsTheChangeAndRetries() throws {
		let url = folder.file("locked.plist")
		let store = Defaults.FileStore.at(url)
		try store.write(1, forKey: "first")
		#expect(store.flush())
		// Another open file description of the lock file: its `flock` conflicts with the store's, as another
		// process's would.
		let lockPath = folder.file(".locked.plist.lock").path
		let holder = open(lockPath, O_RDWR)
		#expect(holder >= 0)
		#expect(flock(holder, LOCK_EX) == 0)
		try store.write(2, forKey: "second")
		FailureRecorder.start()
		// The flush gives up after one wait of the flush's limit, 2 s (a flush that waited for good would meet the
		// suite's time limit). Which wait it made is read from its report, which names its limit, rather than timed:
		// a busy machine can stretch 2 s past any tight bound.
		#expect(!store.flush())
		let reports = FailureRecorder.failures(forKey: "").map(\.message).filter { $0.contains(url.path) }
		#expect(
			reports == [
				"The file \(url.path) stayed locked by another process for 2.0 seconds; the changes stay in memory and are written at the next try."
			], "\(reports)")
		#expect(store.storedValue(forKey: "second") as? Int == 2)
		close(holder)
		// The retry comes by itself; no write or flush from the app. The limit is for a hang: the retry comes 1 s after
		// the failure, and a passing test returns as soon as the file has the value.
		let written = waitUntil(seconds: 30) {
			(try? PropertyListFile.decode(Data(contentsOf: url)))?["second"] as? Int == 2
		}
		#expect(written, "the change was not retried")
	}

	@Test func aLinkPlantedAtTheLockPathIsNotFollowed() throws {
		let url = folder.file("planted.plist")
		let elsewhere = folder.file("elsewhere")
		try FileManager.default.createSymbolicLink(
			atPath: folder.file(".planted.plist.lock").path, withDestinationPath: elsewhere.path)
		let store = Defaults.FileStore.at(url)
		try store.write(1, forKey: "k")
		#expect(!store.flush())
		store.discardPendingChanges()
		#expect(!FileManager.default.fileExists(atPath: elsewhere.path))
	}

	@Test(.enabled(if: geteuid() == 0, "only root can write a file it does not own"))
	func aWriteByRootKeepsTheFilesOwner() throws {
		let folder = try TemporaryDirectory.reachableByEveryUser()
		let url = folder.file("owned.plist")
		try PropertyListSerialization.data(fromPropertyList: ["a": 1], format: .binary, options: 0).write(to: url)
		#expect(chown(folder.url.path, 65_534, 65_534) == 0)
		#expect(chown(url.path, 65_534, 65_534) == 0)
		let store = Defaults.FileStore.at(url)
		try store.write(2, forKey: "b")
		#expect(store.flush())
		var status = stat()
		#expect(stat(url.path, &status) == 0)
		#expect(status.st_uid == 65_534 && status.st_gid == 65_534)
		#expect(stat(folder.file(".owned.plist.lock").path, &status) == 0)
		#expect(status.st_uid == 65_534, "the lock file belongs to the folder's owner")
	}

	@Test func sigtermRightAfterAWriteStillPersistsItAndTheProcessDiesOfSIGTERM() throws {
		let path = folder.file("terminated.plist").path
		let child = try ChildProcess(["file-store-write-then-wait", path, "k", "int:7"])
		#expect(waitUntil(seconds: 15) { child.standardOutputSoFar.contains("written") })
		child.kill(SIGTERM)
		let result = try child.wait(timeout: 15)
		#expect(result.wasSignaled && result.status == SIGTERM, "\(result)")
		let values = try PropertyListFile.decode(Data(contentsOf: URL(filePath: path)))
		#expect(values["k"] as? Int == 7)
	}

	@Test func aStoreKeepsHearingChangesAfterItsFolderIsReplacedOrRemoved() throws {
		let settings = folder.file("settings")
		try FileManager.default.createDirectory(at: settings, withIntermediateDirectories: false)
		let url = settings.appending(path: "app.plist")
		try PropertyListSerialization.data(fromPropertyList: ["k": 0], format: .binary, options: 0).write(to: url)
		let store = Defaults.FileStore.at(url)
		#expect(store.storedValue(forKey: "k") as? Int == 0)
		// Moved away and made again, then removed and made again: each time another program writes the file anew.
		for (round, replacement) in ["moved", "removed"].enumerated() {
			if replacement == "moved" {
				try FileManager.default.moveItem(at: settings, to: folder.file("settings-old"))
			} else {
				try FileManager.default.removeItem(at: settings)
			}
			usleep(100_000)
			try FileManager.default.createDirectory(at: settings, withIntermediateDirectories: false)
			try PropertyListSerialization.data(fromPropertyList: ["k": round + 1], format: .binary, options: 0)
				.write(to: url, options: .atomic)
			let heard = waitUntil(seconds: 10) { store.storedValue(forKey: "k") as? Int == round + 1 }
			#expect(heard, "the change after the folder was \(replacement) was not heard")
		}
	}

	@Test func aConfigurationFolderNameThatIsNotUTF8SendsNoFileElsewhere() throws {
		let home = folder.file("home")
		try FileManager.default.createDirectory(at: home, withIntermediateDirectories: false)
		let executable = try ChildProcess.helperURL(named: "defaults").path
		// The shell passes the byte 0xFF through; Foundation would read it as U+FFFD.
		let command =
			"XDG_CONFIG_HOME=\"$(printf '\(folder.url.path)/config\\377')\" HOME='\(home.path)' "
			+ "'\(executable)' write app k -string v"
		let result = try ChildProcess.run(["-c", command], executable: "/bin/sh")
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		#expect(!names.contains { $0.contains("\u{FFFD}") }, "a folder named with U+FFFD was made: \(names)")
		#expect((result.standardOutput + result.standardError).contains("XDG_CONFIG_HOME"), "\(result)")
	}
}
