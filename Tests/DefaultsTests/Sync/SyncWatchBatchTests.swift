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
		let deadline = ContinuousClock.now + .seconds(30).scaledForSanitizer
		while store.storedValue(forKey: "a") as? String != "two", ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		#expect(store.storedValue(forKey: "a") as? String == "two", "the batch's last change is the key's value")
		// A push pass that starts now (after any pass under way) pushes whatever the batch left looking like a local
		// edit; once it is over, the moment for an echo has passed.
		await engine.pushPendingNow()
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
		// Each wait has a limit of its own, for a hang: with one for all, a connection that took 18 s under load (seen
		// with two runs side by side, the test pool's threads held by other tests) left the next wait almost nothing.
		func limit() -> ContinuousClock.Instant { ContinuousClock.now + .seconds(30).scaledForSanitizer }
		var deadline = limit()
		while !engine.status.isConnected, ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		try #require(engine.status.isConnected)
		store[Defaults.Key<String>("a", default: "", suite: store)] = "mine"
		// The engine's own pass is in its write, which lasts until the gate opens: the two passes asked for now are
		// asked for while it runs, however slowly the machine goes.
		deadline = limit()
		while remote.running.load(ordering: .relaxed) == 0, ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(10))
		}
		try #require(remote.running.load(ordering: .relaxed) == 1, "the engine's pass is writing")
		// The two calls run on an executor of the test's own, which runs their jobs only when the test says so. Once
		// it has run every job they had, and the ones those enqueued, both calls are as far as they can go without
		// the engine's pass: waiting for it, or in a read or write beside it, which the remote counts. The engine's
		// worker is idle meanwhile (its pass is in the remote's write), so the calls' turns on it run here too.
		let executor = HeldJobsExecutor()
		let finished = LockedState(false)
		let calls = Task(executorPreference: executor) {
			async let first = engine.synchronize()
			async let second = engine.synchronize()
			_ = await (first, second)
			finished.withLock { $0 = true }
		}
		executor.runWaitingJobs()
		#expect(remote.readsWhileGated.load(ordering: .relaxed) == 0, "no pass read beside the engine's write")
		#expect(remote.writes.load(ordering: .relaxed) == 1, "no pass wrote beside the engine's write")
		remote.openGate()
		deadline = limit()
		while !finished.withLock({ $0 }), ContinuousClock.now < deadline {
			executor.runWaitingJobs()
			try await Task.sleep(for: .milliseconds(5))
		}
		try #require(finished.withLock { $0 }, "both calls ended")
		await calls.value
		#expect(remote.writes.load(ordering: .relaxed) >= 1)
		#expect(remote.mostAtOnce.load(ordering: .relaxed) == 1, "one write of a key at a time")
	}
}

/// A task executor that runs its jobs only when the test says so, on the test's thread: after ``runWaitingJobs()`` the
/// tasks on it are all suspended.
private final class HeldJobsExecutor: TaskExecutor, Sendable {
	/// A pthread mutex, which the thread sanitizer models (jobs are enqueued from the engine's threads).
	private let jobs = LockedState<[UnownedJob]>([])

	func enqueue(_ job: consuming ExecutorJob) {
		let job = UnownedJob(job)
		jobs.withLock { $0.append(job) }
	}

	/// Runs the jobs waiting now and those they enqueue, on this thread.
	func runWaitingJobs() {
		while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
			job.runSynchronously(on: asUnownedTaskExecutor())
		}
	}
}

/// A remote whose first write waits until ``openGate()`` and later ones take 300 ms; all succeed. It counts the
/// writes, the most that ran at once, the reads, and the reads made while the first write waited.
final class SlowWritesRemote: Defaults.RemoteKeyValueService, @unchecked Sendable {
	let writes = Atomic<Int>(0)
	let running = Atomic<Int>(0)
	let mostAtOnce = Atomic<Int>(0)
	let revision = Atomic<Int64>(10)
	let reads = Atomic<Int>(0)
	let readsWhileGated = Atomic<Int>(0)
	private let isGateOpen = Atomic<Bool>(false)

	func openGate() {
		isGateOpen.store(true, ordering: .releasing)
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		reads.add(1, ordering: .relaxed)
		if running.load(ordering: .relaxed) > 0, !isGateOpen.load(ordering: .acquiring) {
			readsWhileGated.add(1, ordering: .relaxed)
		}
		return Defaults.RemoteSnapshot(entries: [], revision: 10)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		.written(revision: try await slowWrite())
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		// The epoch key is not a push: answered as lost to another machine's, so every read tries again.
		writes.contains(where: \.isEpoch) ? nil : try await slowWrite()
	}

	private func slowWrite() async throws -> Int64 {
		let now = running.add(1, ordering: .relaxed).newValue
		_ = mostAtOnce.max(now, ordering: .relaxed)
		let isFirst = writes.add(1, ordering: .relaxed).newValue == 1
		if isFirst {
			// Bounded, so that a test that never opens the gate still ends (and fails on its count).
			let deadline = ContinuousClock.now + .seconds(30).scaledForSanitizer
			while !isGateOpen.load(ordering: .acquiring), ContinuousClock.now < deadline {
				try await Task.sleep(for: .milliseconds(5))
			}
		} else {
			try await Task.sleep(for: .milliseconds(300))
		}
		running.subtract(1, ordering: .relaxed)
		return revision.add(1, ordering: .relaxed).newValue
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		AsyncThrowingStream { continuation in
			continuation.yield([])
		}
	}
}
