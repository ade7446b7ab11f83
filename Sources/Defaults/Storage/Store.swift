import Foundation

extension Defaults {
	/// A key-value store of property-list values: the one place where ``Defaults`` touches persistence.
	///
	/// A store knows nothing of Swift types beyond property-list values; bridges turn values into those and back.
	/// The package ships three stores: Foundation's `UserDefaults`, ``Defaults/InMemoryStore`` for tests and
	/// previews, and the property-list file store that is the default on Linux.
	///
	/// Values handed to a store are already normalised (see ``Defaults/PropertyList``): `Bool`, `Int`, `UInt64`
	/// (only above `Int.max`), `Double`, `String`, `Data`, `Date`, `[Any]` and `[String: Any]` of those. A store
	/// returns values in the same shapes.
	///
	/// A store must be safe to use from any thread. The protocol does not require `Sendable` only because
	/// Foundation on Linux does not declare `UserDefaults` `Sendable`, though it locks internally.
	///
	/// To write your own store, implement the requirements. Code that uses a store reads with
	/// ``storedValue(forKey:)`` and writes with ``write(_:forKey:)`` and ``removeValue(forKey:)``, which normalise
	/// values and tell observers; the `set…` and `remove…` requirements are the store's own primitives.
	///
	/// ```swift
	/// let store: any Defaults.Store = Defaults.InMemoryStore()
	/// let volume = Defaults.Key<Int>("volume", default: 5, suite: store)
	/// store[volume] = 7
	/// ```
	public protocol Store: AnyObject {
		/// The value stored for `key`, or the registered default, or `nil`.
		func storedValue(forKey key: String) -> Any?

		/// The value for `key` with a version that changes whenever that key's value changes (it may change more
		/// often), or `nil`.
		///
		/// Keys use the version to tell that a stored value is unchanged without comparing it, so they can skip
		/// decoding it again. Versions come from ``Defaults/nextStoreVersion()``. A store that keeps no versions
		/// returns version 0 (the default implementation does), and keys compare stored values instead.
		func versionedValue(forKey key: String) -> Defaults.VersionedValue?

		/// A counter the store advances after every change that reads can see, or `nil` when it cannot promise one.
		///
		/// With a counter, keys of this store answer reads of an unchanged store from the value they decoded last,
		/// with one atomic load; without one (the default, and `UserDefaults`, which other processes change behind
		/// its back), every read looks the value up. See ``Defaults/ChangeCounter`` for what must advance it.
		var changeCounter: Defaults.ChangeCounter? { get }

		/// Stores `value`, an already normalised property-list value, for `key`.
		func setStoredValue(_ value: Any, forKey key: String)

		/// Removes the value stored for `key`; a registered default shows through again.
		func removeStoredValue(forKey key: String)

		/// Registers `values` as defaults: read when nothing is stored, never persisted.
		func registerDefaultValues(_ values: [String: Any])

		/// The keys that have a stored (not only a registered) value.
		func storedKeys() -> [String]

		/// Calls `onChange` with the names of keys whose values changed from outside this process's writes, until the
		/// returned observation is cancelled or released.
		///
		/// The change hub subscribes here, which is how observers hear other processes and machines. The default
		/// implementation delivers what the store reports with ``didChangeExternally(keys:)``; implement it
		/// yourself where your backend has a subscription of its own (a database's change feed, a watch).
		func observeOutsideChanges(
			_ onChange: @escaping @Sendable (Set<String>) -> Void
		) -> Defaults.OutsideChangeObservation

		/// Writes pending changes to durable storage now and picks up changes made elsewhere.
		///
		/// - Returns: `false` if the store could not write.
		@discardableResult
		func flush() -> Bool
	}
}

extension Defaults.Store {
	/// No counter: keys look the value up on every read.
	public var changeCounter: Defaults.ChangeCounter? { nil }
}
