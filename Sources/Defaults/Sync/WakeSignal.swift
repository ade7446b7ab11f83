import Synchronization

/// Wakes one waiting task; a signal sent while nobody waits is kept (once) for the next wait. Cancelling the waiting
/// task wakes it too.
final class WakeSignal: Sendable {
	private struct State {
		var isSignalled = false
		var waiter: CheckedContinuation<Void, Never>?
	}

	private let state = LockedState(State())
	/// Set by the first signal after the waiter last consumed one; later signals see it and return at once, so a
	/// burst of local writes takes the lock once. Cleared under the lock, before the wake-up is handed over, so a
	/// signal that comes after it takes the lock again. What a skipped signal announces (a name in `LocalChanges`)
	/// was recorded before it, so the waiter, woken after the clear, sees it.
	private let isPending = Atomic<Bool>(false)

	func signal() {
		guard !isPending.exchange(true, ordering: .sequentiallyConsistent) else {
			return
		}
		wake()
	}

	/// Resumes the waiter, or keeps the signal for the next wait; always takes the lock.
	private func wake() {
		let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
			guard let waiter = state.waiter else {
				state.isSignalled = true
				return nil
			}
			state.waiter = nil
			isPending.store(false, ordering: .sequentiallyConsistent)
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
						isPending.store(false, ordering: .sequentiallyConsistent)
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
			// Past the shortcut: a cancelled wait must end whatever the pending flag says.
			wake()
		}
	}
}
