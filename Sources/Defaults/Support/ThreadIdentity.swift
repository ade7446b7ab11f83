import Foundation

/// The calling thread, as a number (`pthread_self()`): a store's runtime and the file store mark the thread a
/// migration runs on with it, since what that thread writes and reads goes beneath the administrator's locks.
enum ThreadIdentity {
	static var current: UInt {
		#if canImport(Darwin)
			UInt(bitPattern: pthread_self())
		#else
			UInt(pthread_self())
		#endif
	}
}
