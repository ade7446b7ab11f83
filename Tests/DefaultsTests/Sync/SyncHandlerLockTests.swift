import Foundation
import Testing

@testable import Defaults

/// The app's code that an engine runs (a failure handler with the engine's report, an observer of a value it applies)
/// runs with neither the settings file's lock nor the store's disk lock held, so that it may use the store: flush it,
/// make an engine of it (what `Defaults.iCloud.configure` does), stop another engine of it. The disk lock is not
/// reentrant: before, a report made in a locked step reached the handler with the lock held, and a flush there waited
/// for its own thread for ever.
///
/// The call that could wait for the lock runs on a thread of its own, waited for at most ``bound``, so that a test
/// fails rather than hangs: the handler returns then, and the call ends once the lock is released.
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncHandlerLockTests {
	/// A report made in a locked step (the journal beside the settings file cannot be read, found by the first step of
	/// `synchronize()`): its handler flushes the store and makes another engine of it, each of which takes the disk
	/// lock. Before, both waited until the handler gave up (the bound ran out).
	@Test func aFailureHandlerOfALockedStepsReportCanFlushTheStoreAndMakeAnEngineOfIt() async throws {
		let folder = try TemporaryDirectory()
		let (store, prefix) = try Self.storeWithAnUnreadableJournal(in: folder)
		let remote = ChoreographedRemote(entries: [], revision: 1)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["k"])
		let outcomes = LockedState<(flushed: Bool, madeAnEngine: Bool)?>(nil)
		FailureRecorder.whenReported(forKey: prefix) { failure in
			guard failure.message.contains("sync journal"), outcomes.withLock({ $0 == nil }) else {
				return
			}
			let flushed = Self.returnsInTime { _ = store.flush() }
			let madeAnEngine = Self.returnsInTime {
				_ = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			}
			outcomes.withLock { $0 = (flushed, madeAnEngine) }
		}
		_ = await engine.synchronize()
		let outcome = try #require(outcomes.withLock { $0 }, "the unreadable journal was not reported")
		#expect(outcome.flushed, "flush() in the handler waited for the lock its report was made under")
		#expect(outcome.madeAnEngine, "an engine made in the handler waited for the lock its report was made under")
	}

	/// The same report's handler calls `Defaults.iCloud.configure` again for the store (in a child process:
	/// `Defaults.iCloud` is the process's). Before, the new engine waited for the disk lock the handler's thread held,
	/// for ever: the child was killed when the wait ran out.
	@Test func aFailureHandlerOfALockedStepsReportCanConfigureSyncAgain() async throws {
		let folder = try TemporaryDirectory()
		try FileManager.default.createDirectory(
			at: folder.file("app.plist.sync.intents"), withIntermediateDirectories: false)
		let child = try ChildProcess(["sync-configure-in-handler", folder.url.path])
		defer { child.stopIfRunning() }
		let result = try await child.wait(timeout: 20 * Double(sanitizerSlowdown))
		#expect(result.status == 0 && result.lines.suffix(2) == ["configured", "done"], "\(result)")
	}

	/// An observer of a value an engine applies (its full read at start takes the remote's value of a key the store
	/// lacks) runs once the step has released the locks: its flush of the store returns.
	@Test func anObserverOfAReceivedValueCanFlushTheStore() async throws {
		let folder = try TemporaryDirectory()
		let store = try SyncSettingsFileEdgeTests.freshStore(at: folder.file("settings.plist"))
		let prefix = "/\(uniqueKeyName("flushInObserver"))/"
		let agreed = Defaults.RemoteEntry(
			key: prefix + "k", value: try SyncedValueCoding.encode("zero"), modRevision: 5)
		let engine = Defaults.SyncEngine(
			remote: ChoreographedRemote(entries: [agreed], revision: 10), prefix: prefix, store: store)
		defer { engine.stop() }
		engine.add(["k"])
		let flushed = LockedState<Bool?>(nil)
		let key = Defaults.Key<String>("k", default: "", suite: store)
		let observation = Defaults.observe(key, options: []) { change in
			guard change.newValue == "zero", flushed.withLock({ $0 == nil }) else {
				return
			}
			let outcome = Self.returnsInTime { _ = store.flush() }
			flushed.withLock { $0 = outcome }
		}
		defer { observation.invalidate() }
		engine.start()
		#expect(await eventually { flushed.withLock { $0 } != nil }, "the remote value was not applied")
		#expect(flushed.withLock { $0 } == true, "flush() in the observer waited for the step's lock")
	}

	/// A handler of one engine's report made in a locked step stops another engine of the same store, whose step
	/// under way (a full read, let go by the handler) needs the disk lock: `stop()` waits for that step, which runs,
	/// since the handler holds no lock. Before, the handler held the lock, and the wait ran out (after 2 s; 30 s with
	/// the limit this test sets).
	@Test func aHandlerStoppingAnotherEngineOfTheStoreDoesNotWaitForItsOwnLock() async throws {
		let folder = try TemporaryDirectory()
		let (store, prefix) = try Self.storeWithAnUnreadableJournal(in: folder)
		let other = HeldReadsRemote(ChoreographedRemote(entries: [], revision: 1))
		let stopped = Defaults.SyncEngine(remote: other, prefix: prefix, store: store)
		defer { stopped.stop() }
		// Long enough that only a step waiting for the handler's lock runs it out, not one a loaded machine (every
		// time-sensitive suite at once in CI) gives a thread late.
		stopped.worker.backgroundSteps.waitLimit = .seconds(30)
		stopped.add(["j"])
		stopped.start()
		// Its first step, the full read, is under way and waits for the remote.
		#expect(await eventually { other.heldReads == 1 }, "the other engine did not begin its full read")

		let reporting = Defaults.SyncEngine(
			remote: ChoreographedRemote(entries: [], revision: 1), prefix: prefix, store: store)
		reporting.add(["k"])
		let handled = LockedState(false)
		FailureRecorder.whenReported(forKey: prefix) { failure in
			guard failure.message.contains("sync journal"), handled.withLock({ !$0 }) else {
				return
			}
			handled.withLock { $0 = true }
			// The read answers, and the step goes on to its locked part.
			other.letReadsGo()
			stopped.stop()
		}
		_ = await reporting.synchronize()
		#expect(handled.withLock { $0 }, "the unreadable journal was not reported")
		#expect(!stopped.isRunning)
		#expect(
			stopped.worker.backgroundSteps.waitsRunOut == 0,
			"stop() in the handler waited out its bound for a step that needed the lock the handler held")
	}

	/// How long a call that must not wait for a lock may take before a test takes it for waiting: a flush or an
	/// engine's making takes milliseconds.
	static let bound = Duration.seconds(10).scaledForSanitizer

	/// Runs `work` on a thread of its own, and says whether it returned within ``bound``. One that did not goes on
	/// until it can return.
	static func returnsInTime(_ work: @escaping @Sendable () -> Void) -> Bool {
		let done = DispatchSemaphore(value: 0)
		Thread {
			work()
			done.signal()
		}.start()
		let seconds = Double(bound.components.seconds) + Double(bound.components.attoseconds) / 1e18
		return done.wait(timeout: .now() + seconds) == .success
	}

	/// A fresh store in `folder` whose change journal is a folder: every locked step of an engine of it reports the
	/// journal as unreadable (once per engine), under the settings file's lock, and does nothing else.
	static func storeWithAnUnreadableJournal(in folder: TemporaryDirectory) throws -> (Defaults.FileStore, String) {
		let settings = folder.file("settings.plist")
		try FileManager.default.createDirectory(
			at: URL(filePath: settings.path + ".sync.intents"), withIntermediateDirectories: false)
		let prefix = "/\(uniqueKeyName("handlerLock"))/"
		return (try SyncSettingsFileEdgeTests.freshStore(at: settings), prefix)
	}
}

/// A remote around another whose reads wait until the test lets them go (``letReadsGo()``); from then on they answer
/// at once.
final class HeldReadsRemote: RemoteWrapper, @unchecked Sendable {
	let wrapped: any Defaults.RemoteKeyValueService
	private let held = LockedState<(waiting: [CheckedContinuation<Void, Never>], isOpen: Bool)>(([], false))

	init(_ wrapped: any Defaults.RemoteKeyValueService) {
		self.wrapped = wrapped
	}

	/// How many reads wait.
	var heldReads: Int {
		held.withLock { $0.waiting.count }
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		await withCheckedContinuation { continuation in
			let isOpen = held.withLock { held in
				if !held.isOpen {
					held.waiting.append(continuation)
				}
				return held.isOpen
			}
			if isOpen {
				continuation.resume()
			}
		}
		return try await wrapped.read(prefix: prefix)
	}

	func letReadsGo() {
		let waiting = held.withLock { held in
			held.isOpen = true
			defer { held.waiting = [] }
			return held.waiting
		}
		for continuation in waiting {
			continuation.resume()
		}
	}
}
