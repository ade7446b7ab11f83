import Foundation

extension Defaults {
	/// Runs `body` with its changes hidden from observers: values are written, but no handler, `updates` sequence or
	/// observable value hears of the writes made inside it.
	///
	/// ```swift
	/// Defaults.observe(.level) { change in print(change.newValue) }
	/// Defaults.withoutPropagation {
	/// 	Defaults[.level] = 11 // written, not reported
	/// }
	/// ```
	///
	/// Only writes made by `body` on the calling thread, or in the calling task, are hidden; writes on other threads
	/// at the same time are reported as usual. Tasks that `body` creates inherit the setting, as they inherit every
	/// task-local value. Calls nest. Changes a store detects from outside (another process) are always reported.
	public static func withoutPropagation<Result>(_ body: () throws -> Result) rethrows -> Result {
		try Propagation.$isSuppressed.withValue(true) {
			try body()
		}
	}

	/// Runs the asynchronous `body` with its changes hidden from observers, across its suspension points.
	///
	/// ```swift
	/// await Defaults.withoutPropagation {
	/// 	Defaults[.level] = await fetchLevel()
	/// }
	/// ```
	public static func withoutPropagation<Result>(
		isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Result
	) async rethrows -> Result {
		try await Propagation.$isSuppressed.withValue(true, operation: body)
	}
}

/// Whether changes are being hidden from observers.
///
/// A task-local value: inside a task it belongs to the task (and follows it across threads); outside any task the
/// runtime keeps it per thread. Either way it covers exactly the code that runs inside the closure.
enum Propagation {
	@TaskLocal static var isSuppressed = false
}
