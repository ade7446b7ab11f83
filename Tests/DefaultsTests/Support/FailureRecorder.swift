import Defaults
import Foundation
import Synchronization

/// Collects the failures reported while a test runs, for the key names that test uses.
///
/// `Defaults.failureHandler` is process-wide and tests run in parallel, so each test filters by its own unique key
/// names rather than replacing the handler.
enum FailureRecorder {
	private static let failures = LockedState<[Defaults.Failure]>([])
	private static let actions = LockedState<[String: @Sendable (Defaults.Failure) -> Void]>([:])
	private static let installation: Void = {
		Defaults.failureHandler = { failure in
			FailureRecorder.failures.withLock { $0.append(failure) }
			FailureRecorder.actions.withLock { $0[failure.keyName] }?(failure)
		}
	}()

	/// Starts recording; call before the code that reports.
	static func start() {
		_ = installation
	}

	/// Starts recording, and runs `action` inside the failure handler (on the reporting thread, before the report
	/// returns) for each failure reported for `keyName` from now on.
	static func whenReported(forKey keyName: String, _ action: @escaping @Sendable (Defaults.Failure) -> Void) {
		start()
		actions.withLock { $0[keyName] = action }
	}

	/// The failures reported so far for `keyName`.
	static func failures(forKey keyName: String) -> [Defaults.Failure] {
		failures.withLock { $0.filter { $0.keyName == keyName } }
	}

	/// The failures reported so far whose message contains `text`, for reports that name no key.
	static func failures(mentioning text: String) -> [Defaults.Failure] {
		failures.withLock { $0.filter { $0.message.contains(text) } }
	}
}

/// A key name no other test uses.
func uniqueKeyName(_ base: String = "key") -> String {
	"\(base)_\(UUID().uuidString.replacingOccurrences(of: "-", with: ""))"
}
