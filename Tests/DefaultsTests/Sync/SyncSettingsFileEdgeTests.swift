import DefaultsEtcd
import Foundation
import Testing

@testable import Defaults

/// The settings file under sync, at its edges (issue 18, item 1's remaining gaps): removals the `defaults` command
/// makes, a loss that a later write hides, and a flush that fails. Each test here failed before its fix.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncSettingsFileEdgeTests {
	/// `defaults delete` of more keys than a lost file is told apart from, while the app does not run: the command
	/// records them in the sync queue, so the next start pushes them as removals instead of putting them back.
	@Test func manyKeysDeletedWithTheCommandWhileTheAppIsStoppedAreRemovedEverywhere() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/command-delete/")
		let second = try Machine(etcd: etcd, prefix: "/test/command-delete/")
		#expect(try await first.run("sync-write", ["k*4=v"]).lines == ["synced"])
		#expect(try await second.values(["k*4"]).values.count == 4)

		for name in ["k0", "k1", "k2"] {
			let deleted = try await ChildProcess.run(
				["delete", first.settingsFile.path, name], executable: "defaults", environment: first.environment)
			#expect(deleted.status == 0, "\(deleted)")
		}
		let restarted = try await first.run("sync-dump", ["k*4"])
		#expect(restarted.lines == ["synced", "k3=v"], "\(restarted)")
		#expect(!restarted.standardError.contains("put back"), "\(restarted)")
		#expect(try await second.values(["k*4"]).values == ["k3": "v"])
	}

	/// The same while the app runs: the engine hears the keys go and finds them in the queue file.
	@Test func manyKeysDeletedWithTheCommandWhileTheAppRunsAreRemovedEverywhere() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let store = Defaults.FileStore.at(settings)
		let prefix = "/test/\(uniqueKeyName("running"))/"
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		let names = ["k0", "k1", "k2", "k3"]
		engine.add(names)
		for name in names {
			try store.write("v", forKey: name)
		}
		#expect(await engine.synchronize())
		#expect(store.flush())
		engine.start()
		defer { engine.stop() }

		let deleted = try await ChildProcess.run(
			["delete", settings.path], executable: "defaults", environment: folder.configEnvironment)
		#expect(deleted.status == 0, "\(deleted)")
		let deadline = ContinuousClock.now + .seconds(10)
		// Removed: each key left as a tombstone (no bytes).
		func isEveryKeyRemoved() async throws -> Bool {
			try await remote.read(prefix: prefix).entries.allSatisfy {
				SyncedValueCoding.isRemoval($0.value) || $0.key == prefix + SyncWorker.epochName
			}
		}
		while try await !isEveryKeyRemoved(), ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		#expect(try await isEveryKeyRemoved())
		#expect(names.allSatisfy { store.storedValue(forKey: $0) == nil })
		#expect(FailureRecorder.failures(mentioning: "'\(prefix)' were gone").isEmpty)
	}

	/// A change journal that cannot be appended to (a folder at its place) is left as it is, and the command refuses
	/// and says why, leaving the settings file as it was: a change of a synced key not recorded there would never be
	/// pushed, and nothing is written on a record not understood. (The first form recorded the command's changes in
	/// a queue file; an unreadable one was left alone with a warning and the change went ahead unrecorded.)
	@Test func anUnusableJournalIsLeftAloneAndTheCommandSaysSo() async throws {
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let journal = folder.file("app.plist.sync.intents")
		let original = try PropertyListSerialization.data(
			fromPropertyList: ["a": "1", "b": "2"], format: .xml, options: 0)
		try original.write(to: settings)
		try FileManager.default.createDirectory(at: journal, withIntermediateDirectories: false)

		let deleted = try await ChildProcess.run(
			["delete", settings.path, "a"], executable: "defaults", environment: folder.configEnvironment)
		#expect(deleted.status != 0, "\(deleted)")
		#expect(deleted.standardError.contains("journal"), "\(deleted)")
		var isFolder: ObjCBool = false
		#expect(FileManager.default.fileExists(atPath: journal.path, isDirectory: &isFolder) && isFolder.boolValue)
		#expect(try Data(contentsOf: settings) == original)
	}

	/// A settings file lost while the app did not run, and written again before the engine starts: the two synced
	/// keys it lost were removed by no one (no line in the journal), so they are put back, not removed everywhere.
	/// (The first form needed the store's mark of a lost file for this, since it pushed up to two unrecorded
	/// removals; the journal makes the mark unnecessary, and this test no longer asserts it.)
	@Test func aLossFoundAtStartOutlivesTheNextWriteOfTheFile() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		do {
			let store = try Self.freshStore(at: settings)
			let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/sticky-loss/", store: store)
			engine.add(["a", "b"])
			try store.write("1", forKey: "a")
			try store.write("2", forKey: "b")
			#expect(await engine.synchronize())
			#expect(store.flush())
		}
		try FileManager.default.removeItem(at: settings)

		let store = try Self.freshStore(at: settings)
		try store.write("x", forKey: "unrelated")
		#expect(store.flush())
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/sticky-loss/", store: store)
		engine.add(["a", "b"])
		#expect(await engine.synchronize())

		#expect(store.storedValue(forKey: "a") as? String == "1")
		#expect(store.storedValue(forKey: "b") as? String == "2")
		let remaining = try await remote.read(prefix: "/test/sticky-loss/").entries.filter {
			!$0.key.hasSuffix(SyncWorker.epochName)
		}
		#expect(remaining.count == 2 && remaining.allSatisfy { !SyncedValueCoding.isRemoval($0.value) })
	}

	/// A settings file that cannot be written stops the push: the change is recorded in the journal when the file is
	/// written, and a value goes out only once both are. The store reports the failure (the engine adds no report of
	/// its own: before the journal, it said once that its values were not pushed), and the value goes out once the
	/// file is written.
	@Test func aFailedFlushPushesNothingAndSaysSoOnce() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let store = try Self.freshStore(at: settings)
		let prefix = "/test/\(uniqueKeyName("flush"))/"
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["level"])
		try store.write("1", forKey: "level")
		#expect(await engine.synchronize())

		// A link at the lock file's place: the store refuses to lock through it, so no flush can write the file.
		let lock = folder.file(".app.plist.lock")
		try? FileManager.default.removeItem(at: lock)
		try FileManager.default.createSymbolicLink(atPath: lock.path, withDestinationPath: "/nonexistent")
		try store.write("2", forKey: "level")
		#expect(await engine.synchronize() == false, "the change did not go out")
		#expect(await engine.synchronize() == false)
		#expect(try await Self.value(of: prefix + "level", in: remote) == "1")
		#expect(!FailureRecorder.failures(mentioning: lock.path).isEmpty)

		try FileManager.default.removeItem(at: lock)
		#expect(await engine.synchronize())
		#expect(try await Self.value(of: prefix + "level", in: remote) == "2")
	}

	/// A store of its own at `url`, read from the file now (not the process's shared store for that file).
	static func freshStore(at url: URL) throws -> Defaults.FileStore {
		var failures: [Defaults.Failure] = []
		return Defaults.FileStore(file: SettingsFile(url: url), failures: &failures)
	}

	static func value(of key: String, in remote: EtcdClient) async throws -> String? {
		let entry = try await remote.read(prefix: key).entries.first { $0.key == key }
		return entry.flatMap { SyncedValueCoding.decode($0.value) } as? String
	}
}
