import Foundation
import Testing

/// The test helpers' asynchronous child runs hold no thread while the child runs. Swift's concurrency pool has as many
/// threads as cores (two on CI); a run that blocked one for the child's whole run left, in CI's first pass, other
/// tests' sync engines waiting seconds for a thread.
@Suite(.scaledTimeLimit(minutes: 2)) struct ChildProcessTests {
	/// More runs than the machine has cores, all on an executor of one thread, and the test's own task on that thread
	/// too: every child is running at once, and the test's task sees them all started and lets them end. A run that
	/// held the thread (the synchronous one: checked so by calling it here) starts one child, which waits for the
	/// others until its timeout kills it.
	@Test func asynchronousRunsShareOneThread() async throws {
		let folder = try TemporaryDirectory()
		let release = folder.file("release")
		let count = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
		// Each child says it started (a file of its own), then waits for `release`.
		let script = #"touch "$1"; while [ ! -e "$2" ]; do sleep 0.01; done"#
		let executor = OneThreadExecutor()
		defer { executor.stop() }
		let (allStarted, results) = try await withTaskExecutorPreference(executor) {
			try await withThrowingTaskGroup(of: ChildProcess.Result.self) { group in
				for index in 0..<count {
					let started = folder.file("started-\(index)").path
					group.addTask {
						try await ChildProcess.run(
							["-c", script, "sh", started, release.path], executable: "/bin/sh", timeout: 60)
					}
				}
				let allStarted = await eventually(timeout: .seconds(60)) {
					(0..<count).allSatisfy { FileManager.default.fileExists(atPath: folder.file("started-\($0)").path) }
				}
				_ = FileManager.default.createFile(atPath: release.path, contents: nil)
				var results: [ChildProcess.Result] = []
				for try await result in group {
					results.append(result)
				}
				return (allStarted, results)
			}
		}
		#expect(allStarted, "all \(count) children were running at once")
		#expect(results.count == count)
		#expect(results.allSatisfy { $0.status == 0 && !$0.wasSignaled }, "\(results)")
	}

	/// A wait cancelled (as a test's time limit cancels it) kills its child, by its process id, before it throws:
	/// also a direct wait of a child the caller no longer keeps (a fleet forgets a machine before it waits for it).
	/// Before, only `run` killed it, and such a child went on running after its test.
	@Test(arguments: [false, true]) func aCancelledWaitKillsItsChild(givingUp: Bool) async throws {
		let folder = try TemporaryDirectory()
		let child = try ChildProcess(
			["-c", #"touch "$1"; exec sleep 60"#, "sh", folder.file("started").path], executable: "/bin/sh")
		defer { child.stopIfRunning() }
		#expect(await eventually { FileManager.default.fileExists(atPath: folder.file("started").path) })
		let waiting = Task {
			givingUp
				? try await child.wait(timeout: 60, givingUpBy: folder.file("give-up"))
				: try await child.wait(timeout: 60)
		}
		waiting.cancel()
		await #expect(throws: CancellationError.self) { try await waiting.value }
		#expect(!child.isRunning, "the child outlived its cancelled wait")
	}
}

/// A task executor with one thread of its own, which runs its jobs in order until ``stop()``.
private final class OneThreadExecutor: TaskExecutor, @unchecked Sendable {
	/// Guards `jobs` and `isStopped` (a pthread mutex and condition, which the thread sanitizer models).
	private let condition = NSCondition()
	private var jobs: [UnownedJob] = []
	private var isStopped = false

	init() {
		Thread { [self] in serve() }.start()
	}

	func enqueue(_ job: consuming ExecutorJob) {
		let job = UnownedJob(job)
		condition.lock()
		jobs.append(job)
		condition.signal()
		condition.unlock()
	}

	/// Lets the thread end once the jobs enqueued before are run.
	func stop() {
		condition.lock()
		isStopped = true
		condition.signal()
		condition.unlock()
	}

	/// The thread: the only one that runs this executor's jobs.
	private func serve() {
		while true {
			condition.lock()
			while jobs.isEmpty, !isStopped {
				condition.wait()
			}
			let next = jobs.isEmpty ? nil : jobs.removeFirst()
			condition.unlock()
			guard let next else {
				return
			}
			next.runSynchronously(on: asUnownedTaskExecutor())
		}
	}
}
