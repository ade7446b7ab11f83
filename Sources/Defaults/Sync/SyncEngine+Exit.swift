import Foundation
import Synchronization

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

// A program that writes a synced key and exits normally gets it to the remote: at exit, each engine with changes
// waiting pushes them, for at most `exitWait`, as the file store flushes its file at exit.
extension Defaults.SyncEngine {
	/// How long a normal exit waits for the pushes of changes still pending; the program exits after it whatever
	/// the remote did (the changes then wait in the journal for the next run).
	package static let exitWait: Duration = .seconds(2)

	private final class WeakEngine: Sendable {
		nonisolated(unsafe) weak var engine: Defaults.SyncEngine?

		init(_ engine: Defaults.SyncEngine) {
			self.engine = engine
		}
	}

	/// Every engine alive in this process, for the push at exit: process-wide because exit is the process's. An
	/// atomic update finds the engines of its store through the store's runtime instead.
	private static let liveEngines = LockedState<[ObjectIdentifier: WeakEngine]>([:])

	private static let exitHookInstalled: Void = {
		atexit {
			Defaults.SyncEngine.pushPendingAtExit()
		}
	}()

	/// Makes `engine` push what is pending when the program exits normally.
	static func pushAtExit(_ engine: Defaults.SyncEngine) {
		_ = exitHookInstalled
		liveEngines.withLock { $0[ObjectIdentifier(engine)] = WeakEngine(engine) }
	}

	static func forgetAtExit(_ engine: Defaults.SyncEngine) {
		liveEngines.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(engine)) }
	}

	private static func pushPendingAtExit() {
		let live = liveEngines.withLock { $0.values.compactMap(\.engine) }
		// Then no step of an engine starts any more, and one under way ends first: the process ending in the middle
		// of one would leave the state's temporary file behind.
		defer {
			for engine in live {
				endLockedSteps(of: engine.store)
			}
		}
		let engines = live.filter { $0.hasPendingChanges }
		guard !engines.isEmpty else {
			return
		}
		let done = DispatchSemaphore(value: 0)
		for engine in engines {
			Task.detached {
				await engine.pushPendingNow()
				done.signal()
			}
		}
		let deadline = DispatchTime.now() + .milliseconds(Int(exitWait.components.seconds * 1000))
		for _ in engines {
			guard done.wait(timeout: deadline) == .success else {
				return
			}
		}
	}
}
