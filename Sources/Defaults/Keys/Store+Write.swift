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
	///   when an administrator locked `key`; nothing is written then.
	public func write(_ value: Any?, forKey key: String) throws {
		try refuseLockedKey(key)
		guard let value else {
			removeValue(forKey: key)
			return
		}
		commit(try Defaults.PropertyList.normalize(value), forKey: key)
	}

	/// Removes the value stored for `key` and tells the key's observers, which see it change to its default.
	public func removeValue(forKey key: String) {
		commit(nil, forKey: key)
	}
}
