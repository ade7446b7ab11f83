import Foundation
import Synchronization
import Testing

@testable import Defaults

/// A change made while the remote cannot be reached is recorded as this machine's wish at once, not at the next push
/// pass (none runs offline): a program ended by a signal before etcd answers must not find its removals undone at the
/// next start, as a lost file's keys would be. Failed before the fix: the queue file was never written offline.
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncOfflineQueueTests {
	@Test func aRemovalMadeOfflineIsInTheQueueFileBeforeAnyPush() async throws {
		let folder = FileManager.default.temporaryDirectory.appending(path: "offline-queue-\(UUID().uuidString)")
		try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
		defer { try? FileManager.default.removeItem(at: folder) }
		let stateFile = folder.appending(path: "settings.plist.sync.json")
		let store = try Defaults.InMemoryStore(values: ["theme": "dark", "font": "mono"])
		let remote = UnreachableRemote()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: store, stateFile: stateFile)
		engine.add(["theme", "font"])
		engine.start()
		defer { engine.stop() }

		Defaults.reset(Defaults.Key<String>("theme", default: "light", suite: store))
		let deadline = ContinuousClock.now + .seconds(20)
		while !SyncQueue.load(besideStateFile: stateFile).names.contains("theme"), ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		#expect(SyncQueue.load(besideStateFile: stateFile).names == ["theme"])
		#expect(remote.writes.load(ordering: .relaxed) == 0, "nothing reached the remote")
	}
}

/// A remote that never answers: every request fails as unreachable.
final class UnreachableRemote: Defaults.RemoteKeyValueService, @unchecked Sendable {
	let writes = Atomic<Int>(0)

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		throw Defaults.RemoteServiceError.unreachable("no route to host")
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		writes.add(1, ordering: .relaxed)
		throw Defaults.RemoteServiceError.unreachable("no route to host")
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		self.writes.add(writes.count, ordering: .relaxed)
		throw Defaults.RemoteServiceError.unreachable("no route to host")
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		AsyncThrowingStream { $0.finish(throwing: Defaults.RemoteServiceError.unreachable("no route to host")) }
	}
}
