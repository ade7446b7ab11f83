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
	public final class InMemoryStore: Store, Sendable {
		private struct State {
			var values: [String: VersionedValue] = [:]
			var registered: [String: VersionedValue] = [:]
		}

		private let state: LockedState<State>

		/// Advanced after every write, removal and registration.
		public let changeCounter: ChangeCounter? = ChangeCounter()

		/// Creates a store holding `values`, already in their normalised property-list shape.
		init(normalizedValues values: [String: Any]) {
			self.state = LockedState(
				State(values: values.mapValues { VersionedValue(value: $0, version: Defaults.nextStoreVersion()) }))
		}

		/// Creates an empty store.
		public convenience init() {
			self.init(normalizedValues: [:])
		}

		/// The stored value for `key`, or the registered default.
		public func storedValue(forKey key: String) -> Any? {
			versionedValue(forKey: key)?.value
		}

		/// The stored value for `key`, or the registered default, with its version.
		public func versionedValue(forKey key: String) -> VersionedValue? {
			state.withLock { $0.values[key] ?? $0.registered[key] }
		}

		/// Stores `value` for `key`.
		public func setStoredValue(_ value: Any, forKey key: String) {
			let versioned = VersionedValue(value: value, version: Defaults.nextStoreVersion())
			state.withLock { $0.values[key] = versioned }
			changeCounter?.advance()
		}

		/// Removes the stored value for `key`.
		public func removeStoredValue(forKey key: String) {
			_ = state.withLock { $0.values.removeValue(forKey: key) }
			changeCounter?.advance()
		}

		/// Registers defaults, read when nothing is stored.
		public func registerDefaultValues(_ values: [String: Any]) {
			let versioned = values.mapValues { VersionedValue(value: $0, version: Defaults.nextStoreVersion()) }
			state.withLock { $0.registered.merge(versioned) { _, new in new } }
			changeCounter?.advance()
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
			state.withLock { $0.values.mapValues(\.value) }
		}
	}
}
