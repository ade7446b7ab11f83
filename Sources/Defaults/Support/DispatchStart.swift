import Dispatch
import Synchronization

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// Starts libdispatch's event loop while the process still has descriptors for it, so that the package's own use of
/// Dispatch never meets a process at its descriptor limit.
///
/// On Linux, libdispatch makes an epoll descriptor, an eventfd and a timerfd the first time anything is queued on
/// it, and traps (`SIGILL`) when it cannot: an app that had used up its descriptors crashed as soon as another
/// process wrote its settings file (the reload was queued) or it wrote a setting (the flush was). Once started, it
/// needs no more descriptors for timers on the clock of `DispatchTime.now()`, the only one the package uses. So
/// the file store starts it when it opens a file, if three descriptors are free, and each scheduling asks
/// ``isStarted`` (starting it then if it can) and takes another way when it is not: a reload runs on the calling
/// thread; a flush waits for the next write, `flush()` or exit.
///
/// Process-wide because libdispatch is.
package enum DispatchStart {
	/// Whether the event loop has been started, by this or by anything else of the process before it.
	private static let started = Atomic<Bool>(false)
	/// Serialises attempts, so that two threads never both take the last descriptors.
	private static let attempt = LockedState(())

	/// Whether the package may queue work on Dispatch: `true` once started; otherwise tries to start it now.
	package static var isStarted: Bool {
		#if os(Linux)
			if started.load(ordering: .acquiring) {
				return true
			}
			return attempt.withLock { _ in
				if started.load(ordering: .acquiring) {
					return true
				}
				guard hasFreeDescriptors(3) else {
					return false
				}
				startTimer()
				started.store(true, ordering: .releasing)
				return true
			}
		#else
			return true
		#endif
	}

	/// Arms a Dispatch timer and waits for it, so that libdispatch makes its timerfd now.
	///
	/// A timer rather than `async`: `async` alone leaves the timerfd unmade, and a later `asyncAfter` at the limit
	/// would then never fire. The deadline must still lie ahead when `asyncAfter` looks at it: libdispatch queues a
	/// block whose deadline has passed as a plain `async`, with no timer (which a deadline of `.now()` always is). So
	/// the timer counts only when `asyncAfter` returned before its deadline; otherwise (this thread was held up past
	/// it) it is tried again with a longer delay.
	private static func startTimer() {
		for attempt in 0..<8 {
			let ran = DispatchSemaphore(value: 0)
			let deadline = DispatchTime.now() + .milliseconds(1 << attempt)
			DispatchQueue.global(qos: .utility).asyncAfter(deadline: deadline) { ran.signal() }
			let isArmed = DispatchTime.now() < deadline
			_ = ran.wait(timeout: .now() + .seconds(2))
			if isArmed {
				return
			}
		}
	}

	/// Whether `count` more descriptors can be opened now.
	private static func hasFreeDescriptors(_ count: Int) -> Bool {
		var opened: [Int32] = []
		defer { opened.forEach { close($0) } }
		for _ in 0..<count {
			let descriptor = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
			guard descriptor >= 0 else {
				return false
			}
			opened.append(descriptor)
		}
		return true
	}
}
