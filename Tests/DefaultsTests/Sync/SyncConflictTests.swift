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
}
