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
	public func write(_ value: Any?, forKey key: String) throws {
		let runtime = StoreRuntime.of(self)
		let isMigrating = runtime.isMigratingOnThisThread
		if !isMigrating {
			try refuseLockedKey(key)
		}
		let stored = try value.map { try Defaults.PropertyList.normalize($0) }
		runtime.commit(stored, forKey: key, in: self, beneathLocks: isMigrating)
	}

	/// Removes the value stored for `key` and tells the key's observers, which see it change to its default.
	public func removeValue(forKey key: String) {
		let runtime = StoreRuntime.of(self)
		runtime.commit(nil, forKey: key, in: self, beneathLocks: runtime.isMigratingOnThisThread)
	}
}
