#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// State of any type behind a mutex: the one lock of the package.
///
/// ```swift
/// let names = LockedState<Set<String>>([])
/// let isNew = names.withLock { $0.insert("theme").inserted }
/// ```
///
/// It is a `pthread_mutex_t`, not `Synchronization.Mutex`, on purpose: on Linux `Mutex` waits on a raw futex,
/// which the thread sanitizer does not model, so every access it guards looked like a race (about a thousand
/// warnings over the suite) and a real race could not be told from that noise. The sanitizer intercepts
/// `pthread_mutex_lock` and `pthread_mutex_unlock` and sees the happens-before edge they make. Uncontended, both
/// cost the same here (see Docs/Performance.md).
///
/// The state may be of any type (property-list values are `Any`, so not `Sendable`); everything stored is only
/// touched inside `withLock`, which is what makes the unchecked conformance sound.
@usableFromInline package final class LockedState<State>: @unchecked Sendable {
	// The mutex needs an address that never moves, so it lives in its own allocation.
	@usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
	// Unchecked exclusivity: the mutex already makes every access exclusive, and the runtime's check costs a
	// thread-local lookup and two calls per access, on every read and write of the stores.
	@exclusivity(unchecked) @usableFromInline var state: State

	@usableFromInline package init(_ state: State) {
		self.state = state
		mutex = .allocate(capacity: 1)
		mutex.initialize(to: pthread_mutex_t())
		let status = pthread_mutex_init(mutex, nil)
		precondition(status == 0, "pthread_mutex_init failed: \(status)")
	}

	deinit {
		pthread_mutex_destroy(mutex)
		mutex.deinitialize(count: 1)
		mutex.deallocate()
	}

	/// Runs `body` with the state, holding the lock; nothing else reads or writes the state meanwhile.
	@inlinable
	package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
		pthread_mutex_lock(mutex)
		defer { pthread_mutex_unlock(mutex) }
		return try body(&state)
	}
}
