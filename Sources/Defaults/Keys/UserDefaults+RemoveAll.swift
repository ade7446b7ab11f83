import Foundation

extension UserDefaults {
	/// Removes every value stored in this suite, telling observers, as the well-known Defaults package's
	/// `UserDefaults.removeAll()` does. Registered defaults stay registered.
	///
	/// ```swift
	/// UserDefaults.standard.removeAll()
	/// ```
	///
	/// It lives with the keys, not with the store conformance: telling observers is a write through the package.
	public func removeAll() {
		Defaults.removeAll(suite: self)
	}
}
