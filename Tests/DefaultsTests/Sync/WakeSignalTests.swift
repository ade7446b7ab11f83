import Synchronization
import Testing

@testable import Defaults

/// The sync engine's wake-up: no signal is lost, whether it comes before a wait, during one, or as the waiting task is
/// cancelled (the retry wait races it against a timer and cancels the loser).
@Suite(.scaledTimeLimit(minutes: 1)) struct WakeSignalTests {
	/// Whether `wait()` returns within `limit`, far away: a wait that a signal ends returns at once; one still blocked
	/// then is cancelled.
	static func wakes(_ signal: WakeSignal, within limit: Duration = .seconds(30).scaledForSanitizer) async -> Bool {
		await withTaskGroup(of: Bool.self) { group in
			group.addTask {
				await signal.wait()
				return !Task.isCancelled
			}
			group.addTask {
				try? await Task.sleep(for: limit)
				return false
			}
			defer { group.cancelAll() }
			return await group.next() ?? false
		}
	}

	/// Whether `signal` keeps no signal for the next wait: a new wait then becomes the waiter, the moment that shows it
	/// did not return at once (a kept signal ends it before that), and is cancelled. No timer decides it.
	static func keepsNoSignal(_ signal: WakeSignal) async throws -> Bool {
		let ended = Atomic<Bool>(false)
		let probe = Task {
			await signal.wait()
			ended.store(true, ordering: .sequentiallyConsistent)
		}
		defer { probe.cancel() }
		let deadline = ContinuousClock.now + .seconds(30).scaledForSanitizer
		while !signal.hasWaiter {
			if ended.load(ordering: .sequentiallyConsistent) {
				return false
			}
			try #require(ContinuousClock.now < deadline, "the wait neither began nor ended")
			await Task.yield()
		}
		return true
	}

	static func untilWaiting(_ signal: WakeSignal) async throws {
		let deadline = ContinuousClock.now + .seconds(30).scaledForSanitizer
		while !signal.hasWaiter {
			try #require(ContinuousClock.now < deadline, "the wait never began")
			await Task.yield()
		}
	}

	@Test func aSignalSentWhileNobodyWaitsWakesTheNextWait() async throws {
		let signal = WakeSignal()
		signal.signal()
		#expect(await Self.wakes(signal))
		#expect(try await Self.keepsNoSignal(signal), "one signal wakes one wait")
	}

	@Test func aSignalWakesAWaitUnderWay() async throws {
		let signal = WakeSignal()
		let waiter = Task { await signal.wait() }
		try await Self.untilWaiting(signal)
		signal.signal()
		await waiter.value
	}

	@Test func cancellingTheWaitingTaskEndsItsWait() async throws {
		let signal = WakeSignal()
		let waiter = Task { await signal.wait() }
		try await Self.untilWaiting(signal)
		waiter.cancel()
		await waiter.value
		#expect(try await Self.keepsNoSignal(signal), "the cancellation left no signal behind")
	}

	/// A task cancelled before it waits returns at once, and a signal that was waiting is not its to take: the
	/// engine's retry wait races its wait against a timer and cancels the loser, which nobody asks what it heard, so
	/// a signal it took would be lost and the engine would sleep through a local change.
	@Test func aCancelledTaskTakesNoSignalFromTheNextWait() async throws {
		let signal = WakeSignal()
		signal.signal()
		let cancelled = Task {
			withUnsafeCurrentTask { $0?.cancel() }
			await signal.wait()
		}
		await cancelled.value
		#expect(await Self.wakes(signal), "the signal went to the cancelled task")
	}

	/// A task whose wait a signal ended is cancelled before it has left `wait()` (it waits for a thread), while another
	/// task waits: the cancellation is the first task's, and the other's wait goes on. Before the fix it woke the other
	/// task without a signal.
	@Test func cancellingATaskWhoseWaitEndedLeavesTheNextWaitAlone() async throws {
		let signal = WakeSignal()
		let held = HeldExecutor()
		let first = Task(executorPreference: held) { await signal.wait() }
		held.runWaitingJobs()
		#expect(signal.hasWaiter)
		signal.signal()
		#expect(!signal.hasWaiter, "the signal ended the first wait")
		let second = Task { await signal.wait() }
		try await Self.untilWaiting(signal)

		first.cancel()
		#expect(signal.hasWaiter, "the first task's cancellation ended the second task's wait")

		held.runWaitingJobs()
		await first.value
		signal.signal()
		await second.value
	}
}

/// A task executor that runs its jobs only when the test says so: a task on it that was resumed stays inside the call
/// that suspended it until then.
private final class HeldExecutor: TaskExecutor, Sendable {
	private let jobs = Mutex<[UnownedJob]>([])

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
