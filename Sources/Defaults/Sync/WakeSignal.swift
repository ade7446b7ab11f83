import Synchronization

/// Wakes one waiting task; a signal sent while nobody waits is kept (once) for the next wait. Cancelling the waiting
/// task wakes it too, without taking a signal: one that reaches a waiter whose task was cancelled meanwhile is kept
/// for the next wait, since the cancelled waiter's caller (a task group that raced it against a timer) may never
/// look at it.
final class WakeSignal: Sendable {
	private struct State {
		var isSignalled = false
		/// The waiting task's continuation: resumed with `true` by a signal, `false` by its cancellation.
		var waiter: CheckedContinuation<Bool, Never>?
		/// Which wait `waiter` belongs to: a cancellation ends its own wait only, never one that began after its
		/// own was resumed (its task may be cancelled before it has left `wait()`).
		var waiterNumber = 0
		var waitsBegun = 0
	}

	private let state = LockedState(State())
	/// Set by the first signal after the waiter last consumed one; later signals see it and return at once, so a
	/// burst of local writes takes the lock once. Cleared under the lock, before the wake-up is handed over, so a
	/// signal that comes after it takes the lock again. What a skipped signal announces (a journal line) was
	/// recorded before it, so the waiter, woken after the clear, sees it.
	private let isPending = Atomic<Bool>(false)

	/// Whether a task waits now (for tests, which must know that a wait has begun).
	var hasWaiter: Bool {
		state.withLock { $0.waiter != nil }
	}

	func signal() {
		guard !isPending.exchange(true, ordering: .sequentiallyConsistent) else {
			return
		}
		wake()
	}

	/// Resumes the waiter, or keeps the signal for the next wait; always takes the lock.
	private func wake() {
		let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
			guard let waiter = state.waiter else {
				state.isSignalled = true
				return nil
			}
			state.waiter = nil
			isPending.store(false, ordering: .sequentiallyConsistent)
			return waiter
		}
		waiter?.resume(returning: true)
	}

	func wait() async {
		let number = state.withLock { state in
			state.waitsBegun += 1
			return state.waitsBegun
		}
		let isSignal = await withTaskCancellationHandler {
			await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
				let resumeWith = state.withLock { state -> Bool? in
					// A second waiter at once (the engine has one at a time) returns rather than replace the first.
					if state.isSignalled || state.waiter != nil {
						state.isSignalled = false
						isPending.store(false, ordering: .sequentiallyConsistent)
						return true
					}
					// Checked under the lock that the cancellation handler takes: a wait that registers after the
					// handler ran sees the task cancelled, one before it is resumed by the handler.
					if Task.isCancelled {
						return false
					}
					state.waiter = continuation
					state.waiterNumber = number
					return nil
				}
				if let resumeWith {
					continuation.resume(returning: resumeWith)
				}
			}
		} onCancel: {
			let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
				guard state.waiterNumber == number else {
					return nil
				}
				defer { state.waiter = nil }
				return state.waiter
			}
			waiter?.resume(returning: false)
		}
		if isSignal, Task.isCancelled {
			// Handed to a task that was cancelled meanwhile: keep it for the next wait.
			signal()
		}
	}
}
