import DefaultsEtcd
import Foundation
import Testing

@testable import Defaults

/// `SyncEngine.stop()` lets a step under way finish before it returns, for at most `SyncEngine.stopWait`. Before,
/// it only cancelled the background task: a push waiting for its reply went on after `stop()` had returned, and
/// wrote the sync state file then (the first test failed so).
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncStopTests {
	@Test func stopReturnsOnceAPushUnderWayHasWrittenTheState() async throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.FileStore.at(folder.file("settings.plist"))
		let (remote, engine) = try await Self.engineWatchingAgreedKey(of: store)
		defer { engine.stop() }
		// The reply comes; what is tested is that `stop()` waits for it, not how soon a pool thread takes the step
		// on (three times, one with a write of the state file): CI's pool of two threads ran out the 2 s bound so.
		engine.worker.backgroundSteps.waitLimit = .seconds(30)
		let key = Defaults.Key<String>("k", default: "", suite: store)
		store[key] = "one"
		let push = try await remote.nextWrite()
		#expect(push.value == "one" && push.expectedModRevision == 5)

		// The state file as it is the moment `stop()` returns.
		let stopped = Task {
			await Self.stop(engine) { SyncState.load(from: engine.stateFile).state?.records["k"]?.modRevision }
		}
		// The session let go of its watch: the stop has cancelled it, with the push still waiting for its reply.
		try await remote.waitUntilWatchesEnded(1)
		push.reply(.success(.written(revision: 11)))
		#expect(await stopped.value == 11, "stop() returned before the push's step wrote the state")
		#expect(engine.status.pendingCount == 0)
	}

	/// A push whose request is in flight to a remote that never answers holds `stop()` for its bound only.
	@Test func stopDoesNotWaitForAReplyThatDoesNotCome() async throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.FileStore.at(folder.file("settings.plist"))
		let (remote, engine) = try await Self.engineWatchingAgreedKey(of: store)
		let key = Defaults.Key<String>("k", default: "", suite: store)
		store[key] = "one"
		let push = try await remote.nextWrite()
		// Answered once the test is over, whatever happened: the request is then no longer in flight.
		defer { push.reply(.failure(Defaults.RemoteServiceError.unreachable("the test is over"))) }

		let started = ContinuousClock.now
		await Self.stop(engine) {}
		let took = ContinuousClock.now - started
		#expect(took >= Defaults.SyncEngine.stopWait, "took \(took): it did not wait for the step")
		// The bound and then some for a loaded machine; without a bound it would wait until the time limit.
		#expect(took < Defaults.SyncEngine.stopWait + .seconds(15), "took \(took)")
		#expect(engine.worker.backgroundSteps.waitsRunOut == 1)
		#expect(!engine.isRunning)
		// A later stop() (the engine's release calls one) does not wait another 2 s for the same step: before, each
		// call waited its own bound, and reconfiguring sync against a silent remote blocked twice.
		await Self.stop(engine) {}
		#expect(engine.worker.backgroundSteps.waitsRunOut == 1, "a later stop() waited for the step again")
	}

	/// Two callers of `stop()` at once: the second, too, returns only once the step under way ended or the bound ran
	/// out, so that it can rely on what `stop()` promises. Here the push's reply never comes, so both waits run out.
	/// Before, the second found the loop already taken by the first and returned at once (one wait ran out, not two).
	@Test func aSecondStopAtOnceWaitsForTheStepUnderWayToo() async throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.FileStore.at(folder.file("settings.plist"))
		let (remote, engine) = try await Self.engineWatchingAgreedKey(of: store)
		let key = Defaults.Key<String>("k", default: "", suite: store)
		store[key] = "one"
		let push = try await remote.nextWrite()
		defer { push.reply(.failure(Defaults.RemoteServiceError.unreachable("the test is over"))) }
		// Both waits run out. The second stop() counts its own only if it begins before the first's bound ends, after
		// the test task has seen the watch end (a pool thread, late on a loaded machine): 2 s was short for that.
		engine.worker.backgroundSteps.waitLimit = .seconds(10)

		let first = Task { await Self.stop(engine) {} }
		// The first `stop()` has taken the loop and cancelled it, and waits for the push's step.
		try await remote.waitUntilWatchesEnded(1)
		await Self.stop(engine) {}
		await first.value
		#expect(engine.worker.backgroundSteps.waitsRunOut == 2, "the second stop() did not wait for the step")
	}

	/// `stop()` called from a failure handler the engine calls during one of its steps returns without waiting: that
	/// step goes on only once the handler returns, so a wait for it could only run out, with the settings file's
	/// lock held all along (every other process of the file stalled). The report is the outside edit's, made under
	/// the lock in the background full read at start. Before, the handler's `stop()` waited out its bound.
	@Test func stopFromAFailureHandlerDuringAStepReturnsWithoutWaitingForIt() async throws {
		let folder = try TemporaryDirectory()
		let settings = folder.file("settings.plist")
		let prefix = "/\(uniqueKeyName("stopInHandler"))/"
		let agreed = Defaults.RemoteEntry(
			key: prefix + "k", value: try SyncedValueCoding.encode("zero"), modRevision: 5)
		let remote = ChoreographedRemote(entries: [agreed], revision: 10)
		do {
			let store = try SyncSettingsFileEdgeTests.freshStore(at: settings)
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["k"])
			#expect(await engine.synchronize())
			#expect(store.flush())
		}
		// An edit made without Defaults: no line of the journal says it was made on this machine.
		let data = try Data(contentsOf: settings)
		var values = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
		#expect(values["k"] as? String == "zero")
		values["k"] = "edited"
		try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0).write(to: settings)

		let store = try SyncSettingsFileEdgeTests.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		defer { engine.stop() }
		engine.add(["k"])
		let stoppedInHandler = LockedState(false)
		FailureRecorder.whenReported(forKey: prefix) { [weak engine] failure in
			guard failure.message.contains("without Defaults") else {
				return
			}
			engine?.stop()
			stoppedInHandler.withLock { $0 = true }
		}
		engine.start()
		#expect(await eventually { stoppedInHandler.withLock { $0 } }, "no outside edit was reported")
		#expect(engine.worker.backgroundSteps.waitsRunOut == 0, "the handler's stop() waited for its own step")
		#expect(!engine.isRunning)
		#expect(await eventually { store.storedValue(forKey: "k") as? String == "zero" }, "the step went on")
	}

	/// The same for an observer of a synced key, which runs on the thread of the engine's step that applies a remote
	/// value (here its full read at start, which takes the remote's value of a key the store lacks). Before, the
	/// observer's `stop()` waited out its bound.
	@Test func stopFromAnObserverOfARemoteValueReturnsWithoutWaitingForTheStep() async throws {
		let folder = try TemporaryDirectory()
		let store = try SyncSettingsFileEdgeTests.freshStore(at: folder.file("settings.plist"))
		let prefix = "/\(uniqueKeyName("stopInObserver"))/"
		let agreed = Defaults.RemoteEntry(
			key: prefix + "k", value: try SyncedValueCoding.encode("zero"), modRevision: 5)
		let engine = Defaults.SyncEngine(
			remote: ChoreographedRemote(entries: [agreed], revision: 10), prefix: prefix, store: store)
		defer { engine.stop() }
		engine.add(["k"])
		let stoppedInObserver = LockedState(false)
		let key = Defaults.Key<String>("k", default: "", suite: store)
		let observation = Defaults.observe(key, options: []) { [weak engine] change in
			guard change.newValue == "zero" else {
				return
			}
			engine?.stop()
			stoppedInObserver.withLock { $0 = true }
		}
		defer { observation.invalidate() }
		engine.start()
		#expect(await eventually { stoppedInObserver.withLock { $0 } }, "the remote value was not applied")
		#expect(engine.worker.backgroundSteps.waitsRunOut == 0, "the observer's stop() waited for the step")
		#expect(!engine.isRunning)
	}

	/// A push pass waiting for the settings file's push lock, which another engine's pass holds (one of the same store,
	/// its push on its way), ends without pushing when its engine stops: nothing goes out beside the pass that holds
	/// the lock (whose failure handler may be the caller of `stop()`). Before, the cancelled pass stopped waiting and
	/// pushed without the lock: the remote got its push while the other pass's was on its way (and its request, never
	/// answered here, held `stop()` for its 2 s). Whether `stop()` waited out its bound is not checked: the cancelled
	/// pass needs a thread of the concurrency pool to end, and in CI's first pass every time-sensitive suite shares
	/// the pool's two (a run of that group saw the bound run out once with the fix in).
	@Test func stopEndsAPassWaitingForThePushLockWithoutPushing() async throws {
		// Started and watching before the other pass takes the lock: its first pass, with nothing to push, is over.
		let held = try await HeldPushLock(prefix: "pushLockStop", startsWaitingFirst: true)
		let stopped = held.waiting
		defer { stopped.stop() }
		try held.store.write("two", forKey: "b")
		#expect(
			await eventually { stopped.worker.pushLockWaits.withLock { $0 } == 1 },
			"the stopped engine's pass did not wait for the push lock")

		await Self.stop(stopped) {}
		#expect(held.remote.writeCount == 1, "the stopped engine's pass pushed while another pass held the push lock")
		await held.release()
	}

	/// `synchronize()` called from a task that is cancelled while its pass waits for the push lock another engine's
	/// pass holds: it returns false, and says nothing of an outage (the remote was never in question) nor marks the
	/// engine disconnected. Before, the cancellation was taken for the remote's failure: "Syncing … stopped:
	/// CancellationError()" reported, the status disconnected.
	@Test func aSynchronizeCancelledWhileItWaitsReportsNoOutage() async throws {
		FailureRecorder.start()
		let held = try await HeldPushLock(prefix: "cancelledSynchronize")
		let cancelled = held.waiting
		defer { cancelled.stop() }
		try held.store.write("two", forKey: "b")
		let synchronizing = Task { await cancelled.synchronize() }
		#expect(
			await eventually { cancelled.worker.pushLockWaits.withLock { $0 } == 1 },
			"the pass did not wait for the push lock")
		synchronizing.cancel()
		#expect(await synchronizing.value == false)
		let outages = FailureRecorder.failures(mentioning: "Syncing '\(held.prefix)' stopped").map(\.message)
		#expect(outages.isEmpty, "\(outages)")
		#expect(cancelled.status.lastError == nil, "\(cancelled.status)")
		await held.release()
	}

	/// `stop()` of an engine whose pusher waits for a pass already in flight, one its own `synchronize()` runs (which
	/// the stop does not cancel) and which waits for the push lock another engine's pass holds (review `review41b`):
	/// the pusher's wait ends with the stop, and `stop()` does not wait for the pass. Before, the pusher waited for
	/// that pass whatever happened: `stop()` waited out its bound (30 s here) while the pass waited for the lock and
	/// then pushed without it.
	@Test func stopDoesNotWaitForAPassItsPusherWaitsFor() async throws {
		let held = try await HeldPushLock(prefix: "pusherWaits", startsWaitingFirst: true)
		let stopped = held.waiting
		defer { stopped.stop() }
		stopped.worker.backgroundSteps.waitLimit = .seconds(30)
		// The pass of `synchronize()` comes first, and waits for the push lock (with nothing to push, it takes it
		// all the same).
		let synchronizing = Task { await stopped.synchronize() }
		#expect(
			await eventually { stopped.worker.pushLockWaits.withLock { $0 } == 1 },
			"the pass of synchronize() did not wait for the push lock")
		// The pusher, woken by a write, waits for that pass: a background step under way.
		try held.store.write("two", forKey: "b")
		#expect(
			await eventually { stopped.worker.backgroundSteps.underWayCount == 1 },
			"the pusher did not begin a step")

		await Self.stop(stopped) {}
		#expect(stopped.worker.backgroundSteps.waitsRunOut == 0, "stop() waited for the pass its pusher waited for")
		#expect(held.remote.writeCount == 1, "a pass pushed while another held the push lock")
		synchronizing.cancel()
		await held.release()
		// Before the fix, the pass of `synchronize()` gave up on the lock and pushed: answered, so that it ends.
		if held.remote.writeCount > 1 {
			try await held.remote.nextWrite().reply(.success(.written(revision: 3)))
		}
		#expect(await synchronizing.value == false)
	}

	/// Two engines of one settings file and one ``ChoreographedRemote``: `holding` (it syncs `a`) has a pass under way
	/// that holds the file's push lock, its push of `a` held by the remote until ``release()``; `waiting` (it syncs
	/// `b`; started and watching first when `startsWaitingFirst`) is the engine under test, which the caller stops.
	private struct HeldPushLock {
		let store: any Defaults.Store
		let prefix: String
		let remote = ChoreographedRemote(entries: [], revision: 1)
		let waiting: Defaults.SyncEngine
		private let folder: TemporaryDirectory
		private let holding: Defaults.SyncEngine
		private let holdingPass: Task<Void, Never>
		private let push: ChoreographedRemote.Write

		init(prefix name: String, startsWaitingFirst: Bool = false) async throws {
			folder = try TemporaryDirectory()
			store = try SyncSettingsFileEdgeTests.freshStore(at: folder.file("settings.plist"))
			prefix = "/\(uniqueKeyName(name))/"
			holding = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			holding.add(["a"])
			waiting = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			waiting.add(["b"])
			if startsWaitingFirst {
				waiting.start()
				try await remote.waitUntilWatching(sessions: 1)
				// Its first pass (nothing to push) has ended: else a `synchronize()` of the test may wait for that
				// pass rather than run one of its own.
				_ = await waiting.pushPendingNow()
			}
			try store.write("one", forKey: "a")
			let holding = holding
			holdingPass = Task { _ = await holding.pushPendingNow() }
			push = try await remote.nextWrite()
			#expect(push.key == prefix + "a")
		}

		/// Answers the held push, waits for its pass to end and stops `holding`.
		func release() async {
			push.reply(.success(.written(revision: 2)))
			await holdingPass.value
			holding.stop()
		}
	}

	#if canImport(Glibc)
		/// `stop()` of an engine whose client fetches its token from a member that answers the client's checks and
		/// never the fetch (the first step's first request): the step ends with the stop, and the wait does not run
		/// out. Before, the fetch went to the socket transport directly, whose wait a cancellation does not end, and
		/// `stop()` waited out its bound (20 s here, far above what a loaded machine takes to end a cancelled step;
		/// the request's timeout is an hour).
		@Test func stopEndsAStepWaitingForItsTokenFetch() async throws {
			let header = #"{"header":{"revision":"1","raft_term":"2"}}"#
			let gateway = try FakeGateway { path, _ in
				path == "/v3/kv/range" ? EtcdErrorMessageTests.reply("200 OK", header) : nil
			}
			defer { gateway.stop() }
			let folder = try TemporaryDirectory()
			let store = Defaults.FileStore.at(folder.file("settings.plist"))
			let remote = try EtcdClient(
				endpoints: [gateway.endpoint], credentials: .init(user: "u", password: "p"), requestTimeout: 3600)
			let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/token-stop/", store: store)
			engine.worker.backgroundSteps.waitLimit = .seconds(20)
			engine.add(["k"])
			engine.start()
			while !gateway.requestHeads.contains(where: { $0.hasPrefix("POST /v3/auth/authenticate") }) {
				try await Task.sleep(for: .milliseconds(10))
			}
			await Self.stop(engine) {}
			#expect(engine.worker.backgroundSteps.waitsRunOut == 0, "stop() waited out its bound for the token fetch")
		}
	#endif

	/// Calls `engine.stop()`, which blocks, on a thread of its own, and returns what `then` gives the moment it
	/// returned. Not on a thread of Swift's concurrency pool: the step it waits for needs one, and the pool has as
	/// many as cores (two on CI), which two tests blocking them at once would leave without any.
	private static func stop<T: Sendable>(
		_ engine: Defaults.SyncEngine, then: @escaping @Sendable () -> T
	) async -> T {
		await withCheckedContinuation { continuation in
			Thread {
				engine.stop()
				continuation.resume(returning: then())
			}.start()
		}
	}

	/// An engine syncing `k` of `store` with a ``ChoreographedRemote`` that holds `SyncInFlightPushTests.agreed`,
	/// started and watching (so the store holds "zero"). The caller stops the engine.
	private static func engineWatchingAgreedKey(
		of store: any Defaults.Store
	) async throws -> (
		ChoreographedRemote, Defaults.SyncEngine
	) {
		let remote = ChoreographedRemote(entries: [SyncInFlightPushTests.agreed], revision: 10)
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: store)
		engine.add(["k"])
		engine.start()
		do {
			try await remote.waitUntilWatching(sessions: 1)
		} catch {
			engine.stop()
			throw error
		}
		return (remote, engine)
	}
}
