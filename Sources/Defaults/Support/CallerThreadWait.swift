import Foundation

/// Runs asynchronous work for synchronous code that must wait for it (the synchronous `Defaults.update` of a synced
/// key), while the work's one synchronous callback (the update's closure) still runs on the waiting thread.
///
/// The callback stays on the caller's thread because it is the caller's: it is not `Sendable`, it may capture state
/// of the caller's actor or thread, and it must never run after the wait returned. So the work never holds the
/// callback itself; it hands its input to the waiting thread and waits for the answer, and once the wait ends (done or
/// out of time) a later call of the callback throws ``Failure/ended`` without running it.
///
/// Blocking is safe only where the work does not need the blocked thread: the main thread or the main actor (the
/// work never needs either) or a thread that runs no task (Dispatch's or the program's own). A thread of Swift's concurrency pool
/// is refused: the work runs on that pool, which has as many threads as cores, so blocking them could leave the work
/// none.
package final class CallerThreadWait<Input, Output, Result>: @unchecked Sendable {
	/// Why the wait ended without the work's result.
	package enum Failure: Error {
		/// The calling thread may not block (it belongs to Swift's concurrency pool); nothing was started.
		case wouldBlockThePool
		/// The work did not end within the limit; `callbackRan` says whether the callback ran at least once.
		case timedOut(callbackRan: Bool)
		/// The callback was called after the wait had ended; it did not run.
		case ended
	}

	private enum State {
		case idle
		/// The work asks the waiting thread to run the callback on this input.
		case request(Input)
		/// The waiting thread's answer to the last request.
		case answer(Swift.Result<Output, any Error>)
		case finished(Swift.Result<Result, any Error>)
		/// The waiting thread stopped waiting: later requests are refused.
		case ended
	}

	// Every stored property is read and written only while `condition` is locked, which makes the unchecked conformance
	// sound. An input or output is handed over, never shared: its sender waits until the other side took it.
	private let condition = NSCondition()
	private var state = State.idle

	private init() {}

	/// Starts `work` in a task and waits for it at most `limit`, running `callback` on this thread each time `work`
	/// calls the function it is given.
	///
	/// - Throws: what `work` throws, or ``Failure``.
	package static func run(
		limit: Duration,
		callback: (Input) throws -> Output,
		work: @escaping @Sendable (_ callback: @escaping @Sendable (Input) throws -> Output) async throws -> Result
	) throws -> Result {
		guard CallerThread.mayBlock else {
			throw Failure.wouldBlockThePool
		}
		let wait = CallerThreadWait()
		let task = Task {
			let result: Swift.Result<Result, any Error>
			do {
				result = .success(try await work { input in try wait.request(input) })
			} catch {
				result = .failure(error)
			}
			wait.finish(result)
		}
		let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
		do {
			return try wait.serve(callback, until: Date(timeIntervalSinceNow: seconds))
		} catch Failure.timedOut(let callbackRan) {
			// Nobody waits for the work any more: it ends at its next suspension point instead of running on.
			task.cancel()
			throw Failure.timedOut(callbackRan: callbackRan)
		}
	}

	/// The work's side: asks the waiting thread to run the callback and waits for its answer.
	private func request(_ input: Input) throws -> Output {
		condition.lock()
		defer { condition.unlock() }
		guard case .idle = state else {
			throw Failure.ended
		}
		state = .request(input)
		condition.broadcast()
		while true {
			switch state {
			case .answer(let answer):
				state = .idle
				return try answer.get()
			case .ended:
				throw Failure.ended
			case .idle, .request, .finished:
				condition.wait()
			}
		}
	}

	private func finish(_ result: Swift.Result<Result, any Error>) {
		condition.lock()
		defer { condition.unlock() }
		if case .ended = state {
			return
		}
		state = .finished(result)
		condition.broadcast()
	}

	/// The waiting thread's side: runs the callback for each request until the work finishes or `deadline` passes.
	private func serve(_ callback: (Input) throws -> Output, until deadline: Date) throws -> Result {
		var callbackRan = false
		condition.lock()
		defer { condition.unlock() }
		while true {
			switch state {
			case .finished(let result):
				state = .ended
				return try result.get()
			case .request(let input):
				condition.unlock()
				let answer = Swift.Result { try callback(input) }
				callbackRan = true
				condition.lock()
				state = .answer(answer)
				condition.broadcast()
			case .idle, .answer, .ended:
				if Date() >= deadline {
					state = .ended
					condition.broadcast()
					throw Failure.timedOut(callbackRan: callbackRan)
				}
				_ = condition.wait(until: deadline)
			}
		}
	}
}

/// Where the calling code runs, as far as blocking it is concerned.
package enum CallerThread {
	/// Whether the calling thread may block on asynchronous work: the main thread, the main actor, or a thread that
	/// runs no task.
	package static var mayBlock: Bool {
		Thread.isMainThread || isOnMainQueue || withUnsafeCurrentTask { $0 == nil }
	}

	/// Whether the calling code runs on Dispatch's main queue, the main actor's executor. Where a thread other than
	/// the main one drains that queue (the test runner is such a process), `Thread.isMainThread` is `false` on the
	/// main actor.
	package static var isOnMainQueue: Bool {
		DispatchQueue.getSpecific(key: mainQueueMark) == true
	}

	/// A mark on the main queue, set on first use: process-wide, as the queue is the process's.
	private static let mainQueueMark: DispatchSpecificKey<Bool> = {
		let key = DispatchSpecificKey<Bool>()
		DispatchQueue.main.setSpecific(key: key, value: true)
		return key
	}()
}
