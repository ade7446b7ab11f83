import Foundation

extension Defaults.Store {
	/// Tells observers that the values of `keys` changed without going through the package: another process
	/// rewrote the store's file, for example.
	///
	/// A store calls this after it has taken the new values in, so that observers read them.
	public func didChangeExternally(keys: Set<String>) {
		// Filled in by the change hub (observation).
	}
}
