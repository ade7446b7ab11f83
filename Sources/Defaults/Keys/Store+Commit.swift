extension Defaults.Store {
	/// The one write primitive of the package, for writes that name a store and a key name: the store's runtime
	/// stores `stored` (removes the value for `nil`), counts the change and tells who listens (see
	/// `StoreRuntime+Listeners.swift`). Writes through a key of this store use the key's runtime directly.
	func commit(_ stored: Any?, forKey key: String) {
		StoreRuntime.of(self).commit(stored, forKey: key, in: self)
	}
}
