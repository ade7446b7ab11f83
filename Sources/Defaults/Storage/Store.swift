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

		/// Stores `value`, an already normalised property-list value, for `key`.
		func setStoredValue(_ value: Any, forKey key: String)

		/// Removes the value stored for `key`; a registered default shows through again.
		func removeStoredValue(forKey key: String)

		/// Registers `values` as defaults: read when nothing is stored, never persisted.
		func registerDefaultValues(_ values: [String: Any])

		/// The keys that have a stored (not only a registered) value.
		func storedKeys() -> [String]

		/// Whether every change of the store's values reaches the package: its writes, the defaults its keys register,
		/// and the changes the store reports with ``reportOutsideChanges(_:)``. `true` by default.
		///
		/// While it holds, keys answer reads of an unchanged store from the value they decoded last, with one atomic
		/// load and no lookup. A store that changes behind the package's back without reporting it (`UserDefaults`,
		/// which other processes and Foundation's own API change) returns `false`, and its keys look every read up.
		///
		/// A call of the store's own primitives (`setStoredValue(_:forKey:)` and the like) is a change past the package:
		/// write through ``write(_:forKey:)``, ``removeValue(forKey:)`` or a key instead, or report it.
		///
		/// ```swift
		/// final class ReplicaStore: Defaults.Store {
		///     var reportsEveryChange: Bool { false }  // another program writes the replica without telling us
		///     // … the other requirements
		/// }
		/// ```
		var reportsEveryChange: Bool { get }

		/// Writes pending changes to durable storage now and picks up changes made elsewhere.
		///
		/// - Returns: `false` if the store could not write.
		@discardableResult
		func flush() -> Bool
	}
}

extension Defaults.Store {
	/// `true`: a store reports every change it makes itself with ``reportOutsideChanges(_:)``.
	public var reportsEveryChange: Bool { true }
}

extension Defaults.Store {
	/// The default registered for `key` with ``registerDefaultValues(_:)``, apart from any value stored or layered
	/// above it; `nil` for a store that cannot tell them apart (one of the app's own).
	package func registeredValue(forKey key: String) -> Any? {
		switch self {
		case let store as Defaults.FileStore: store.registeredValue(forKey: key)
		case let store as Defaults.InMemoryStore: store.registeredValue(forKey: key)
		// Those registered through this seam, which the package keeps, as Foundation does, for the whole process.
		case is UserDefaults: RegisteredUserDefaults.values[key]
		default: nil
		}
	}
}
