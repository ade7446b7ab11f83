import Foundation

/// The well-known Defaults package's `removeAll()` on `UserDefaults`, which tells observers: a write through the
/// package, so it lives with the keys rather than with the store conformance.
extension UserDefaults {
	/// Removes every value stored in this suite, telling observers, as the well-known Defaults package's
	/// `UserDefaults.removeAll()` does. Registered defaults stay registered.
	///
	/// ```swift
	/// UserDefaults.standard.removeAll()
	/// ```
	public func removeAll() {
		Defaults.removeAll(suite: self)
	}
}
