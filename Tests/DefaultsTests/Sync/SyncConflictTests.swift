import DefaultsEtcd
import Foundation
import Synchronization
import Testing

@testable import Defaults

/// The machine whose change loses is told, with both values (issue 18, the conflict rule).
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncConflictTests {
	@Test func ofTwoChangesMadeWithoutSeeingEachOtherTheLaterCommittedOneIsReportedToItsMachine() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let (first, second) = (Defaults.InMemoryStore(), Defaults.InMemoryStore())
		let firstSync = Defaults.SyncEngine(remote: remote, prefix: "/test/told/", store: first)
		let secondSync = Defaults.SyncEngine(remote: remote, prefix: "/test/told/", store: second)
		firstSync.add(["mode"])
		secondSync.add(["mode"])
		try first.write("base", forKey: "mode")
		#expect(await firstSync.synchronize())
		#expect(await secondSync.synchronize())

		let conflicts = secondSync.conflicts
		try first.write("first", forKey: "mode")
		try second.write("second", forKey: "mode")
		#expect(await firstSync.synchronize())
		#expect(await secondSync.synchronize())

		#expect(second.storedValue(forKey: "mode") as? String == "first")
		var iterator = conflicts.makeAsyncIterator()
		let conflict = try #require(await iterator.next())
		#expect(conflict.keyName == "mode")
		#expect(conflict.discardedLocalValue as? String == "second")
		#expect(conflict.winningRemoteValue as? String == "first")
		#expect(conflict.remoteRevision > 0)
	}

	/// The app hears its lost changes through `Defaults.iCloud`, with no engine of its own: the engine `configure` made
	/// is not public, and `conflicts` is its one route besides the failure handler.
	@Test func theConfiguredEngineTellsTheAppThroughICloud() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let other = Defaults.InMemoryStore()
		let otherSync = Defaults.SyncEngine(remote: remote, prefix: "/test/told-icloud/", store: other)
		otherSync.add(["mode"])
		try other.write("base", forKey: "mode")
		#expect(await otherSync.synchronize())

		let app = try Machine(etcd: etcd, prefix: "/test/told-icloud/")
		let go = app.folder.file("go")
		// The limits are for a hang: each side goes on as soon as its event comes. The child keeps a clock of its own
		// twice, for the go file and then for the conflict, hence the test's wait of both.
		let limit = 30 * sanitizerSlowdown
		let child = try app.start("sync-lose-conflict", ["mode", "mine", go.path, "\(limit)"])
		#expect(try await child.waitForOutput("written", timeout: TimeInterval(limit)))
		try other.write("theirs", forKey: "mode")
		#expect(await otherSync.synchronize())
		#expect(FileManager.default.createFile(atPath: go.path, contents: nil))
		let result = try await child.wait(timeout: TimeInterval(2 * limit))
		#expect(result.status == 0, "\(result)")
		#expect(result.lines.contains("conflict mode mine theirs"), "\(result)")
	}

	/// A push that loses while the engine knows a later revision waits for the key to be read again before it is
	/// reported; when the settings file's lock cannot be had for that step, the key is read again at the next pass
	/// and the loss is reported then, not dropped.
	@Test func aLossWhoseRefreshCouldNotLockTheSettingsFileIsReportedAtTheNextPass() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("refresh-locked"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let store = try SyncSettingsFileEdgeTests.freshStore(at: settings)
		do {
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["mode"])
			try store.write("base", forKey: "mode")
			#expect(await engine.synchronize())
			engine.stop()
		}
		// Another machine changes the key, then another key: the next run's first read sees a revision past the
		// key's, so the key's lost push waits for a read of it.
		let base = try #require(try await remote.read(prefix: prefix + "mode").entries.first)
		_ = try await remote.compareAndSwap(
			key: prefix + "mode", value: try SyncedValueCoding.encode("theirs"), expectedModRevision: base.modRevision)
		_ = try await remote.compareAndSwap(
			key: prefix + "other", value: try SyncedValueCoding.encode("x"), expectedModRevision: 0)
		try store.write("mine", forKey: "mode")
		#expect(store.flush())
		let lock = LockedState<Int32>(-1)
		let locking = FirstReadRemote(remote: remote, of: prefix + "mode") {
			lock.withLock { descriptor in
				#expect(SettingsFile(url: settings).lock(&descriptor, waitingAtMost: .seconds(5)) == nil)
			}
		}
		let engine = Defaults.SyncEngine(remote: locking, prefix: prefix, store: store)
		engine.add(["mode"])
		defer { engine.stop() }
		let conflicts = engine.conflicts
		await engine.pushPendingNow()
		lock.withLock { SettingsFile(url: settings).unlock(&$0) }
		try #require(locking.hasRead, "the lost push's key was not read again")
		try #require(await engine.worker.toRefresh.contains("mode"), "the key was not kept to be read again")
		await engine.pushPendingNow()
		var iterator = conflicts.makeAsyncIterator()
		let conflict = try #require(await iterator.next())
		#expect(conflict.keyName == "mode")
		#expect(conflict.discardedLocalValue as? String == "mine")
		#expect(conflict.winningRemoteValue as? String == "theirs")
		#expect(store.storedValue(forKey: "mode") as? String == "theirs")
	}
}

/// A real remote that runs `hook` before its first read of exactly `prefix`.
final class FirstReadRemote: RemoteWrapper {
	let wrapped: any Defaults.RemoteKeyValueService
	private let prefix: String
	private let hook: @Sendable () -> Void
	private let read = Atomic<Bool>(false)

	/// Whether the hook has run.
	var hasRead: Bool { read.load(ordering: .relaxed) }

	init(remote: any Defaults.RemoteKeyValueService, of prefix: String, hook: @escaping @Sendable () -> Void) {
		self.wrapped = remote
		self.prefix = prefix
		self.hook = hook
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		if prefix == self.prefix, !read.exchange(true, ordering: .relaxed) {
			hook()
		}
		return try await wrapped.read(prefix: prefix)
	}
}
