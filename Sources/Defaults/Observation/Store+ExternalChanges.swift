import Foundation

extension Defaults.Store {
	/// Tells observers that the values of `keys` changed without going through the package: another process
	/// rewrote the store's file, for example.
	///
	/// A store calls this after it has taken the new values in, so that observers read them. Only observed keys cost
	/// anything; the old value an observer gets is the last one the package saw for the key. Changes reported here
	/// are heard also inside `Defaults.withoutPropagation`, which hides only writes made in its
	/// closure.
	public func didChangeExternally(keys: Set<String>) {
		ChangeHub.shared.storeDidChangeExternally(self, keys: keys)
	}
}
