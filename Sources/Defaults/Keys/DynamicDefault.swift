import Foundation

/// A key's dynamic default: a closure that need not be `Sendable`, called one call at a time.
///
/// The closure is only ever called under `lock`, so no two threads run it at once: that is what makes sharing it
/// between threads sound, and what the unchecked conformance relies on. The lock is recursive, so a default that
/// reads its own key's default does not deadlock.
final class DynamicDefault<Value>: @unchecked Sendable {
	private let lock = NSRecursiveLock()
	private let makeValue: () -> Value

	init(_ makeValue: @escaping () -> Value) {
		self.makeValue = makeValue
	}

	func call() -> Value {
		lock.lock()
		defer { lock.unlock() }
		return makeValue()
	}
}
