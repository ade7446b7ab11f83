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
	// The mutex needs an address that never moves, so it lives in its own allocation. The state does too: reached
	// through a pointer, an access is a plain load or store that the sanitizer checks against the mutex, with no
	// formal access of a class property (the runtime's exclusivity check would cost a thread-local lookup and two
	// calls per access on every read and write of the stores, and the sanitizer's model of such an access to a
	// zero-sized state, `LockedState(())`, reported a race on the object's header).
	@usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
	@usableFromInline let state: UnsafeMutablePointer<State>

	@usableFromInline package init(_ state: State) {
		self.state = .allocate(capacity: 1)
		self.state.initialize(to: state)
		mutex = .allocate(capacity: 1)
		mutex.initialize(to: pthread_mutex_t())
		let status = pthread_mutex_init(mutex, nil)
		precondition(status == 0, "pthread_mutex_init failed: \(status)")
	}

	deinit {
		pthread_mutex_destroy(mutex)
		mutex.deinitialize(count: 1)
		mutex.deallocate()
		state.deinitialize(count: 1)
		state.deallocate()
	}

	/// Runs `body` with the state, holding the lock; nothing else reads or writes the state meanwhile.
	@inlinable
	package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
		pthread_mutex_lock(mutex)
		defer { pthread_mutex_unlock(mutex) }
		return try body(&state.pointee)
	}
}
