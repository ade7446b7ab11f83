import Foundation
import Synchronization

extension Defaults {
	/// Whether `name` follows the rules for key names: ASCII, not starting with `@`, without `.`. Package access, as
	/// in the well-known package, whose own tests call it through `@testable import`.
	///
	/// A key with a name that breaks them still works with the package's own stores, but not with key-value
	/// observation on Apple platforms; creating one reports a ``Defaults/Failure`` with reason
	/// ``Defaults/Failure/Reason/invalidKeyName`` once, as the well-known Defaults package warns once.
	///
	/// ```swift
	/// Defaults.isValidKeyPath(name: "theme")      // true
	/// Defaults.isValidKeyPath(name: "ui.theme")   // false
	/// ```
	package static func isValidKeyPath(name: String) -> Bool {
		KeyNameRules.violation(in: name) == nil
	}
}

/// Checks key names against the rules of property-list stores, reporting each offending name once.
enum KeyNameRules {
	private static let reported = LockedState<Set<String>>([])

	static func violation(in name: String) -> String? {
		if !name.allSatisfy(\.isASCII) {
			return "it contains characters that are not ASCII"
		}
		if name.hasPrefix("@") {
			return "it starts with '@'"
		}
		if name.contains(".") {
			return "it contains '.'"
		}
		return nil
	}

	static func check(_ name: String) {
		guard let rule = violation(in: name) else {
			return
		}
		let isNew = reported.withLock { $0.insert(name).inserted }
		guard isNew else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: name, reason: .invalidKeyName,
				message:
					"The key name must be ASCII, not start with @, and cannot contain a dot (.). The key name '\(name)' breaks that rule: \(rule)."
			))
	}
}
