import Foundation

// The synchronous `Defaults.update` of a synced key (Keys hands it here through `RemoteUpdater`): the same
// compare-and-swap loop as the asynchronous form, in a task, while the calling thread waits and runs the closure.
// Top-level code in `main.swift` compiles `try await Defaults.update(…)` to the synchronous form, so it has to work.
extension Defaults.SyncEngine {
	/// How long a synchronous update waits for the remote: the time an update keeps asking about a lost answer, and
	/// as long again for its reads and tries. Past it, the update throws, and its closure no longer runs.
	static let waitingUpdateLimit = atomicUpdateResolveTime * 2

	func updateWaiting(
		_ names: [String], in store: any Defaults.Store, _ transform: ([String: Any]) throws -> [String: Any]
	) throws -> Int? {
		let box = StoreBox(store)
		do {
			let outcome = try CallerThreadWait.run(limit: Self.waitingUpdateLimit, callback: transform) { transform in
				try await Self.atomicUpdate(forKeys: names, in: box.store) { try transform($0) }
			}
			guard case .updated(_, let run) = outcome else {
				return nil
			}
			return run
		} catch let failure as CallerThreadWait<[String: Any], [String: Any], AtomicUpdatesOutcome>.Failure {
			let quoted = AtomicUpdateLoop.quoted(names)
			switch failure {
			case .wouldBlockThePool:
				throw Defaults.SyncedUpdateError(
					keyNames: names, reason: .needsAwait,
					message:
						"The update of \(quoted) was not made: the synchronous form of Defaults.update was called on a thread of Swift's concurrency pool (a synchronous function called from async code), where waiting for the remote could leave the pool no thread. Call it as `try await Defaults.update(…)` from async code; nothing was changed."
				)
			case .timedOut(let callbackRan):
				throw Defaults.SyncedUpdateError(
					keyNames: names, reason: callbackRan ? .outcomeUnknown : .unreachable,
					message: callbackRan
						? "The update of \(quoted) did not finish within \(Self.waitingUpdateLimit) and was abandoned after a try was sent: it may have been committed; if so, its value arrives like any remote change."
						: "The update of \(quoted) was not made: the remote did not answer within \(Self.waitingUpdateLimit); nothing was changed."
				)
			case .ended:
				// Only the work's side sees `ended`, and the work's errors reach the caller as `timedOut`.
				throw Defaults.SyncedUpdateError(
					keyNames: names, reason: .outcomeUnknown, message: "The update of \(quoted) was abandoned.")
			}
		}
	}
}
