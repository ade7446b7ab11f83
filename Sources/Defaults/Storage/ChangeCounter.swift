import Synchronization

extension Defaults {
	/// A number a store advances after every change of a value that reads can see, so that keys can tell with one
	/// atomic load that nothing changed since they last read.
	///
	/// A store that offers one (see ``Defaults/Store/changeCounter``) must advance it after every change: its own
	/// writes and removals, registered defaults, launch arguments, and values it takes in from elsewhere (another
	/// process, a reload, sync). Keys then answer a read of an unchanged store from the value they decoded last,
	/// without locking or looking anything up.
	///
	/// ```swift
	/// final class MyStore: Defaults.Store {
	///     let changeCounter: Defaults.ChangeCounter? = Defaults.ChangeCounter()
	///     func setStoredValue(_ value: Any, forKey key: String) {
	///         // … store the value, then:
	///         changeCounter?.advance()
	///     }
	///     // …
	/// }
	/// ```
	public final class ChangeCounter: Sendable {
		@usableFromInline let count = Atomic<UInt64>(0)

		/// Creates a counter at zero.
		public init() {}

		/// The number of changes so far. Reads made after a change see at least that change's count.
		///
		/// Inlinable, so that a key's read loads the count in place: a call would make the caller retain and release
		/// the counter around it, an atomic write to the counter's own cache line on every read, which two threads
		/// reading at once fight over.
		@inlinable
		public var value: UInt64 {
			count.load(ordering: .acquiring)
		}

		/// Counts one change. Call it after the changed value is in place, so that a reader that sees the new count
		/// also sees the new value.
		public func advance() {
			count.add(1, ordering: .releasing)
		}
	}
}
