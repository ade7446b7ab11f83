import Foundation

extension Defaults {
	/// A store that keeps values in memory only: for tests, previews and scratch settings.
	///
	/// Nothing touches the disk, so there is nothing to clean up; each instance starts empty.
	///
	/// ```swift
	/// let store = Defaults.InMemoryStore()
	/// let volume = Defaults.Key<Int>("volume", default: 5, suite: store)
	/// store[volume] = 7
	/// ```
	public final class InMemoryStore: Store, CountsItsOwnChanges, HoldsItsAttachments, Sendable {
		private struct State {
			var values: [String: Any] = [:]
			var registered: [String: Any] = [:]
		}

		private let state: LockedState<State>
		/// Registered defaults read beneath the store's own (``registeredValue(forKey:)``): a test's stand-in reads the
		/// registrations of the store it stands in for, as the app would.
		private let registeredBeneath: (@Sendable (String) -> Any?)?

		/// Advanced by every write, removal and registration, also those made past the package.
		let changeCounter = ChangeCounter()
		/// The store's runtime, kept here rather than in a table: see `StoreAttachments`.
		let attachments = StoreAttachments()

		/// Creates a store holding `values`, already in their normalised property-list shape, that reads the registered
		/// defaults `registeredBeneath` gives beneath its own.
		init(normalizedValues values: [String: Any], registeredBeneath: (@Sendable (String) -> Any?)? = nil) {
			self.state = LockedState(State(values: values))
			self.registeredBeneath = registeredBeneath
		}

		/// Creates an empty store that reads the registered defaults `registeredBeneath` gives, as they are when read,
		/// beneath its own registrations: the stand-in of a test's scope, beneath which the replaced store's show.
		package convenience init(registeredBeneath: @escaping @Sendable (String) -> Any?) {
			self.init(normalizedValues: [:], registeredBeneath: registeredBeneath)
		}

		/// Creates an empty store.
		public convenience init() {
			self.init(normalizedValues: [:])
		}

		/// The stored value for `key`, or the registered default.
		public func storedValue(forKey key: String) -> Any? {
			// The defaults beneath are read outside the lock: they belong to another store, with its own.
			state.withLock { $0.values[key] ?? $0.registered[key] } ?? registeredBeneath?(key)
		}

		/// The default registered for `key`, here or beneath.
		package func registeredValue(forKey key: String) -> Any? {
			state.withLock { $0.registered[key] } ?? registeredBeneath?(key)
		}

		/// Stores `value` for `key`.
		public func setStoredValue(_ value: Any, forKey key: String) {
			state.withLock { $0.values[key] = value }
			changeCounter.advance()
		}

		/// Removes the stored value for `key`.
		public func removeStoredValue(forKey key: String) {
			_ = state.withLock { $0.values.removeValue(forKey: key) }
			changeCounter.advance()
		}

		/// Registers defaults, read when nothing is stored.
		public func registerDefaultValues(_ values: [String: Any]) {
			state.withLock { $0.registered.merge(values) { _, new in new } }
			changeCounter.advance()
		}

		/// The keys with a stored value.
		public func storedKeys() -> [String] {
			state.withLock { Array($0.values.keys) }
		}

		/// Does nothing: there is no durable storage. Returns `true`.
		@discardableResult
		public func flush() -> Bool { true }

		/// Every stored value (registered defaults excluded). For the package's tests: a program reads the names with
		/// `storedKeys()` and each value with `storedValue(forKey:)`.
		package var dictionaryRepresentation: [String: Any] {
			state.withLock { $0.values }
		}
	}
}
