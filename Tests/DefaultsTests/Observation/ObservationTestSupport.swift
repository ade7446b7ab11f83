import Defaults
import Foundation

/// Collects what handlers receive, from any thread.
final class Recorder<Element>: @unchecked Sendable {
	// Elements are only touched under the lock, which is what the unchecked conformance relies on.
	private let lock = NSLock()
	private var elements: [Element] = []

	func append(_ element: Element) {
		lock.withLock { elements.append(element) }
	}

	var values: [Element] {
		lock.withLock { elements }
	}

	var count: Int {
		lock.withLock { elements.count }
	}
}

/// Something a handler captures, to check with a weak reference that the handler was released.
final class Probe: Sendable {}

/// Waits until `condition` holds, checking often, for at most `timeout`; returns whether it held.
///
/// The timeout is generous so that a loaded machine does not fail the test; a passing test returns at once.
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
	let deadline = ContinuousClock.now + timeout
	while !condition() {
		if ContinuousClock.now >= deadline {
			return false
		}
		try? await Task.sleep(for: .milliseconds(5))
	}
	return true
}
