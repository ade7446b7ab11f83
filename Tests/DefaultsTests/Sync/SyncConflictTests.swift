import DefaultsEtcd
import Foundation
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
		let child = try app.start("sync-lose-conflict", ["mode", "mine", go.path, "20"])
		#expect(try await child.waitForOutput("written", timeout: 20))
		try other.write("theirs", forKey: "mode")
		#expect(await otherSync.synchronize())
		#expect(FileManager.default.createFile(atPath: go.path, contents: nil))
		let result = try await child.wait(timeout: 30)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines.contains("conflict mode mine theirs"), "\(result)")
	}
}
