extension Defaults.Store {
	/// The one write primitive of the package, for writes that name a store and a key name: the store's runtime
	/// stores `stored` (removes the value for `nil`), counts the change and tells who listens (see
	/// `StoreRuntime+Listeners.swift`). Writes through a key of this store use the key's runtime directly.
	///
	/// - Parameter beneathLocks: store the user's value even when an administrator locked the key (sync's remote
	///   values, migrations); the key still reads the locked value.
	func commit(_ stored: Any?, forKey key: String, beneathLocks: Bool = false) {
		StoreRuntime.of(self).commit(stored, forKey: key, in: self, beneathLocks: beneathLocks)
	}
}
