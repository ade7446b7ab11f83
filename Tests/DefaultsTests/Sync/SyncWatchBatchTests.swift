import Foundation
import Synchronization
import Testing

@testable import Defaults

/// A watch delivers several changes at once after a reconnect; each is applied knowing what the ones before it
/// stored, so none is mistaken for a local edit and pushed back (an echo, reported as a lost conflict).
@Suite(.timeLimit(.minutes(1))) struct SyncWatchBatchTests {
	@Test func twoChangesOfAKeyNotStoredHereInOneBatchAreTakenInAndNothingIsPushedBack() async throws {
		let remote = BatchRemote(events: [
			.put(.init(key: "/p/a", value: try SyncedValueCoding.encode("one"), modRevision: 12)),
			.put(.init(key: "/p/a", value: try SyncedValueCoding.encode("two"), modRevision: 13)),
		])
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: store)
		engine.add(["a"])
		engine.start()
		defer { engine.stop() }

		let deadline = ContinuousClock.now + .seconds(10)
		while store.storedValue(forKey: "a") as? String != "two", ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		#expect(store.storedValue(forKey: "a") as? String == "two", "the batch's last change is the key's value")
		// A push would follow the batch within the engine's next pass; give it that long to show up.
		try await Task.sleep(for: .milliseconds(500))
		#expect(remote.writes.load(ordering: .relaxed) == 0, "nothing this machine received is pushed back")
	}
}

/// A remote whose read answers revision 10 with nothing and whose watch sends one batch, then stays open; it counts
/// the writes it is asked for.
final class BatchRemote: Defaults.RemoteKeyValueService, @unchecked Sendable {
	let writes = Atomic<Int>(0)
	let events: [Defaults.RemoteEvent]

	init(events: [Defaults.RemoteEvent]) {
		self.events = events
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		Defaults.RemoteSnapshot(entries: [], revision: 10)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		writes.add(1, ordering: .relaxed)
		return .written(revision: 100)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		self.writes.add(writes.count, ordering: .relaxed)
		return 100
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		let events = events
		return AsyncThrowingStream { continuation in
			continuation.yield([])
			continuation.yield(events)
		}
	}
}
