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

		/// Advanced by every write, removal and registration, also those made past the package.
		let changeCounter = ChangeCounter()
		/// The store's runtime, kept here rather than in a table: see `StoreAttachments`.
		let attachments = StoreAttachments()

		/// Creates a store holding `values`, already in their normalised property-list shape.
		init(normalizedValues values: [String: Any]) {
			self.state = LockedState(State(values: values))
		}

		/// Creates an empty store.
		public convenience init() {
			self.init(normalizedValues: [:])
		}

		/// The stored value for `key`, or the registered default.
		public func storedValue(forKey key: String) -> Any? {
			state.withLock { $0.values[key] ?? $0.registered[key] }
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

		/// Every stored value (registered defaults excluded).
		public var dictionaryRepresentation: [String: Any] {
			state.withLock { $0.values }
		}
	}
}
