import Foundation

// The public writes of a store: they go through `commit`, so that keys' caches, failure records and observers hear
// them like a write through a key.

extension Defaults.Store {
	/// Normalises `value` to a property-list value and stores it for `key`; `nil` removes the value.
	///
	/// ```swift
	/// try store.write(["a", "b"], forKey: "recent")
	/// ```
	///
	/// - Throws: ``Defaults/PropertyList/Error`` when `value` is not a property-list value, ``Defaults/LockedKeyError``
	///   when an administrator locked `key` (except in a migration's step, which works on the user's values beneath
	///   the locks); nothing is written then.
	///
	/// In a test's isolated scope (the `DefaultsTesting` library) that replaces this store, the value is written to the
	/// store standing in for it.
	public func write(_ value: Any?, forKey key: String) throws {
		let store = Defaults.resolved(self)
		let runtime = StoreRuntime.of(store)
		let isMigrating = runtime.isMigratingOnThisThread
		if !isMigrating {
			try store.refuseLockedKey(key)
		}
		let stored = try value.map { try Defaults.PropertyList.normalize($0) }
		runtime.commit(stored, forKey: key, in: store, beneathLocks: isMigrating)
	}

	/// Removes the value stored for `key` and tells the key's observers, which see it change to its default.
	///
	/// In a test's isolated scope that replaces this store, the value is removed from the store standing in for it.
	public func removeValue(forKey key: String) {
		let store = Defaults.resolved(self)
		let runtime = StoreRuntime.of(store)
		runtime.commit(nil, forKey: key, in: store, beneathLocks: runtime.isMigratingOnThisThread)
	}
}
