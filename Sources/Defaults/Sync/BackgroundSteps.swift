import Foundation

/// The steps of an engine's background sync under way (a push pass, a read of the remote, an application of the
/// watch's changes), so that ``Defaults/SyncEngine/stop()`` can wait for them: each may write the store and the sync
/// state file when it ends. Once closed, no new step begins, until the engine starts again.
final class BackgroundSteps: @unchecked Sendable {
	// All read and written only while `condition` is locked, which makes the unchecked conformance sound.
	private let condition = NSCondition()
	private var underWay = 0
	private var isClosed = false
	/// Until when a wait for the steps under way at the close goes on: set by the close, so that every caller of
	/// `stop()` after it (a second one, the engine's `deinit`) waits for the same steps until the same moment, not
	/// for a further limit of its own.
	private var waitDeadline = Date.distantPast
	private var runOut = 0
	private var limit = Defaults.SyncEngine.stopWait

	/// How long a wait for the steps under way at a close goes on (``Defaults/SyncEngine/stopWait``). A test that
	/// must tell a wait that ran out from a step that a loaded machine gave a thread late lengthens it.
	var waitLimit: Duration {
		get {
			condition.lock()
			defer { condition.unlock() }
			return limit
		}
		set {
			condition.lock()
			limit = newValue
			condition.unlock()
		}
	}

	/// Lets steps begin (the engine starts).
	func open() {
		condition.lock()
		isClosed = false
		condition.unlock()
	}

	/// Lets no step begin any more (the engine stops); those under way go on. The first close after an open sets
	/// the deadline of ``waitUntilNoneUnderWay()``: ``waitLimit`` from now.
	func close() {
		condition.lock()
		if !isClosed {
			isClosed = true
			let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) / 1e18
			waitDeadline = Date(timeIntervalSinceNow: seconds)
		}
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

	/// How many steps are under way (a test waits for one to begin).
	var underWayCount: Int {
		condition.lock()
		defer { condition.unlock() }
		return underWay
	}

	/// How many waits blocked until the deadline and ran out with a step still under way (a test tells a bounded wait
	/// from none by it).
	var waitsRunOut: Int {
		condition.lock()
		defer { condition.unlock() }
		return runOut
	}

	/// Blocks until no step is under way, at most until the deadline the close set; at once when none is.
	func waitUntilNoneUnderWay() {
		condition.lock()
		defer { condition.unlock() }
		while underWay > 0 {
			// Past already: an earlier caller's wait ran out, and this one adds nothing to it.
			guard waitDeadline > Date() else {
				return
			}
			guard condition.wait(until: waitDeadline) else {
				runOut += underWay > 0 ? 1 : 0
				return
			}
		}
	}
}
