import Synchronization

/// Wakes one waiting task; a signal sent while nobody waits is kept (once) for the next wait. Cancelling the waiting
/// task wakes it too.
final class WakeSignal: Sendable {
	private struct State {
		var isSignalled = false
		var waiter: CheckedContinuation<Void, Never>?
	}

	private let state = Mutex(State())

	func signal() {
		let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
			guard let waiter = state.waiter else {
				state.isSignalled = true
				return nil
			}
			state.waiter = nil
			return waiter
		}
		waiter?.resume()
	}

	func wait() async {
		await withTaskCancellationHandler {
			await withCheckedContinuation { continuation in
				let resumeNow = state.withLock { state in
					if state.isSignalled || state.waiter != nil {
						state.isSignalled = false
						return true
					}
					state.waiter = continuation
					return false
				}
				if resumeNow {
					continuation.resume()
				}
			}
		} onCancel: {
			signal()
		}
	}
}

/// The names of synced keys changed locally and not yet looked at, each with a count of its changes, so that a push
/// forgets a name only if no change came in while it was being pushed.
final class LocalChanges: Sendable {
	private let changes = Mutex<[String: Int]>([:])

	func withLock<Result>(_ body: (inout [String: Int]) -> Result) -> Result {
		changes.withLock { body(&$0) }
	}
}
