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
		#expect(try first.run("sync-write", ["k*4=v"]).lines == ["synced"])
		#expect(try second.values(["k*4"]).values.count == 4)

		for name in ["k0", "k1", "k2"] {
			let deleted = try ChildProcess.run(
				["delete", first.settingsFile.path, name], executable: "defaults", environment: first.environment)
			#expect(deleted.status == 0, "\(deleted)")
		}
		let restarted = try first.run("sync-dump", ["k*4"])
		#expect(restarted.lines == ["synced", "k3=v"], "\(restarted)")
		#expect(!restarted.standardError.contains("put back"), "\(restarted)")
		#expect(try second.values(["k*4"]).values == ["k3": "v"])
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

		let deleted = try ChildProcess.run(
			["delete", settings.path], executable: "defaults", environment: folder.configEnvironment)
		#expect(deleted.status == 0, "\(deleted)")
		let deadline = ContinuousClock.now + .seconds(10)
		// Removed: each key left as a tombstone (no bytes).
		func isEveryKeyRemoved() async throws -> Bool {
			try await remote.read(prefix: prefix).entries.allSatisfy { $0.value.isEmpty }
		}
		while try await !isEveryKeyRemoved(), ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		#expect(try await isEveryKeyRemoved())
		#expect(names.allSatisfy { store.storedValue(forKey: $0) == nil })
		#expect(FailureRecorder.failures(mentioning: "'\(prefix)' were gone").isEmpty)
	}

	/// A sync queue that does not read is left byte for byte as it is, and the command says so; the deletion itself
	/// goes ahead.
	@Test func anUnreadableQueueIsLeftAloneAndTheCommandSaysSo() throws {
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let queue = folder.file("app.plist.sync.queue.json")
		try PropertyListSerialization.data(fromPropertyList: ["a": "1", "b": "2"], format: .xml, options: 0)
			.write(to: settings)
		let garbage = Data("{\"names\": [".utf8)
		try garbage.write(to: queue)

		let deleted = try ChildProcess.run(
			["delete", settings.path, "a"], executable: "defaults", environment: folder.configEnvironment)
		#expect(deleted.status == 0, "\(deleted)")
		#expect(deleted.standardError.contains("sync queue"), "\(deleted)")
		#expect(try Data(contentsOf: queue) == garbage)
		let remaining = try PropertyListSerialization.propertyList(from: Data(contentsOf: settings), format: nil)
		#expect((remaining as? [String: String]) == ["b": "2"])
	}

	/// A loss the store found at start stays a loss after the app writes a sound file again: the two synced keys it
	/// lost (no more than a `defaults delete` might remove) are put back, not removed everywhere.
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
		#expect(try await remote.read(prefix: "/test/sticky-loss/").entries.count == 2)
		#expect(store.fileLossMark == 0, "cleared once the lost keys are back")
	}

	/// A settings file that cannot be written stops the push: the value would be in etcd and not on this machine's
	/// disk. The failure is reported once, and the value goes out once the file is written.
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
		#expect(FailureRecorder.failures(mentioning: "'\(prefix)' could not be written").count == 1)

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
