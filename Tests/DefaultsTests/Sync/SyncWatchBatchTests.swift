import Foundation
import Synchronization
import Testing

@testable import Defaults

/// A watch delivers several changes at once after a reconnect; each is applied knowing what the ones before it
/// stored, so none is mistaken for a local edit and pushed back (an echo, reported as a lost conflict).
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncWatchBatchTests {
	@Test func twoChangesOfAKeyNotStoredHereInOneBatchAreTakenInAndNothingIsPushedBack() async throws {
		let remote = ScriptedRemote()
		remote.watchEvents = [
			.put(.init(key: "/p/a", value: try SyncedValueCoding.encode("one"), modRevision: 12)),
			.put(.init(key: "/p/a", value: try SyncedValueCoding.encode("two"), modRevision: 13)),
		]
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: store)
		engine.add(["a"])
		engine.start()
		defer { engine.stop() }

		// Generous: in the whole suite, hundreds of tests share two threads, and the engine's tasks wait their turn.
		let deadline = ContinuousClock.now + .seconds(30)
		while store.storedValue(forKey: "a") as? String != "two", ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		#expect(store.storedValue(forKey: "a") as? String == "two", "the batch's last change is the key's value")
		// A push would follow the batch within the engine's next pass; give it that long to show up.
		try await Task.sleep(for: .milliseconds(500))
		#expect(remote.writes.load(ordering: .relaxed) == 0, "nothing this machine received is pushed back")
	}
}

/// Push passes run one at a time: `synchronize()` while the engine's own pass is under way waits for it.
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncPushPassTests {
	@Test func synchronizeDuringAPushWaitsForItInsteadOfPushingTheSameKeyBesideIt() async throws {
		let remote = SlowWritesRemote()
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: store)
		engine.add(["a"])
		engine.start()
		defer { engine.stop() }
		let deadline = ContinuousClock.now + .seconds(30)
		while !engine.status.isConnected, ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		try #require(engine.status.isConnected)
		store[Defaults.Key<String>("a", default: "", suite: store)] = "mine"
		// While the engine's pass is in its slow write, two more passes are asked for.
		try await Task.sleep(for: .milliseconds(100))
		async let first = engine.synchronize()
		async let second = engine.synchronize()
		_ = await (first, second)
		#expect(remote.writes.load(ordering: .relaxed) >= 1)
		#expect(remote.mostAtOnce.load(ordering: .relaxed) == 1, "one write of a key at a time")
	}
}

/// A remote whose writes take 300 ms and succeed; it counts them and the most that ran at once.
final class SlowWritesRemote: Defaults.RemoteKeyValueService, @unchecked Sendable {
	let writes = Atomic<Int>(0)
	let running = Atomic<Int>(0)
	let mostAtOnce = Atomic<Int>(0)
	let revision = Atomic<Int64>(10)

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		Defaults.RemoteSnapshot(entries: [], revision: 10)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		.written(revision: try await slowWrite())
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		try await slowWrite()
	}

	private func slowWrite() async throws -> Int64 {
		let now = running.add(1, ordering: .relaxed).newValue
		_ = mostAtOnce.max(now, ordering: .relaxed)
		writes.add(1, ordering: .relaxed)
		try await Task.sleep(for: .milliseconds(300))
		running.subtract(1, ordering: .relaxed)
		return revision.add(1, ordering: .relaxed).newValue
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		AsyncThrowingStream { continuation in
			continuation.yield([])
		}
	}
}
