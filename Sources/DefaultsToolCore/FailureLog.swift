import Defaults
import Synchronization

/// Collects the failures the library reports, so that a command can turn a storage failure into its exit status.
///
/// Key-name warnings are dropped: the command reads and writes whatever keys a file holds, and names with `.` are
/// common in settings written by other programs.
final class FailureLog: Sendable {
	static let shared = FailureLog()

	private struct State {
		var storageFailures: [String] = []
	}

	private let state = LockedState(State())

	/// Routes the library's failures here.
	func install() {
		Defaults.failureHandler = { [self] failure in
			record(failure)
		}
	}

	/// The storage failures reported since the last call, as one message, or `nil` if there were none.
	func takeStorageFailure() -> String? {
		let failures = state.withLock { state in
			defer { state.storageFailures = [] }
			return state.storageFailures
		}
		return failures.isEmpty ? nil : failures.joined(separator: "\n")
	}

	private func record(_ failure: Defaults.Failure) {
		guard failure.reason == .storage else {
			return
		}
		state.withLock { state in
			state.storageFailures.append(failure.message)
		}
	}
}
