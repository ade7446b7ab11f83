import Synchronization

/// State of any type behind a mutex, for state that holds property-list values (`Any`, so not `Sendable`).
///
/// Everything stored is only touched inside `withLock`, which is what makes the unchecked conformance sound.
final class LockedState<State>: @unchecked Sendable {
	private let mutex = Mutex(())
	// Unchecked exclusivity: the mutex already makes every access exclusive, and the runtime's check costs a
	// thread-local lookup and two calls per access, on every read and write of the stores.
	@exclusivity(unchecked) private var state: State

	init(_ state: State) {
		self.state = state
	}

	func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
		try mutex.withLock { _ in try body(&state) }
	}
}
