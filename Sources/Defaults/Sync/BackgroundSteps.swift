import Foundation

/// The steps of an engine's background sync under way (a push pass, a read of the remote, an application of the
/// watch's changes), so that ``Defaults/SyncEngine/stop()`` can wait for them: each may write the store and the sync
/// state file when it ends. Once closed, no new step begins, until the engine starts again.
final class BackgroundSteps: @unchecked Sendable {
	// Both read and written only while `condition` is locked, which makes the unchecked conformance sound.
	private let condition = NSCondition()
	private var underWay = 0
	private var isClosed = false
	private var runOut = 0

	/// Lets steps begin (the engine starts).
	func open() {
		condition.lock()
		isClosed = false
		condition.unlock()
	}

	/// Lets no step begin any more (the engine stops); those under way go on.
	func close() {
		condition.lock()
		isClosed = true
		condition.unlock()
	}

	/// Counts a step as under way until ``end()``; `false`, counting nothing, once closed: the step must not run.
	func begin() -> Bool {
		condition.lock()
		defer { condition.unlock() }
		guard !isClosed else {
			return false
		}
		underWay += 1
		return true
	}

	func end() {
		condition.lock()
		underWay -= 1
		condition.broadcast()
		condition.unlock()
	}

	/// How many waits ran out their limit with a step still under way (a test tells a bounded wait from none by it).
	var waitsRunOut: Int {
		condition.lock()
		defer { condition.unlock() }
		return runOut
	}

	/// Blocks until no step is under way, at most `limit`; at once when none is.
	func waitUntilNoneUnderWay(atMost limit: Duration) {
		let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
		let deadline = Date(timeIntervalSinceNow: seconds)
		condition.lock()
		defer { condition.unlock() }
		while underWay > 0 {
			guard condition.wait(until: deadline) else {
				runOut += underWay > 0 ? 1 : 0
				return
			}
		}
	}
}
