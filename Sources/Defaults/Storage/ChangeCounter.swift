import Synchronization

extension Defaults {
	/// A number advanced after every change of a store's values that reads can see, so that a key can tell with one
	/// atomic load that nothing changed since it last read.
	///
	/// The package owns it (each store's runtime holds one) and advances it wherever it sees a change: a write
	/// through `commit`, a registration through a key, an outside change a store reports. The stores the package
	/// ships advance it in their primitives instead, which are public and may be called past the package; their
	/// runtime adopts their counter.
	@usableFromInline
	package final class ChangeCounter: Sendable {
		@usableFromInline let count = Atomic<UInt64>(0)

		package init() {}

		/// The number of changes so far. Reads made after a change see at least that change's count.
		///
		/// Inlinable, so that a key's read loads the count in place: a call would make the caller retain and release
		/// the counter around it, an atomic write to the counter's own cache line on every read, which two threads
		/// reading at once fight over.
		@inlinable
		package var value: UInt64 {
			count.load(ordering: .acquiring)
		}

		/// Set in ``value`` while a scope somewhere in the process reads and writes another store in this store's place
		/// (a test's isolated store). A key never remembers a value under a count that carries it, so every read of
		/// the store misses its key's cache and looks further, while a read of a store no scope replaces pays nothing
		/// for the check: its count simply matches.
		package static let standInFlag: UInt64 = 1 << 63

		/// Sets or clears ``standInFlag``; the caller orders the calls (one scope's end never clears another's flag).
		package func setStoodIn(_ isStoodIn: Bool) {
			if isStoodIn {
				count.bitwiseOr(Self.standInFlag, ordering: .releasing)
			} else {
				count.bitwiseAnd(~Self.standInFlag, ordering: .releasing)
			}
		}

		/// Counts one change. Call it after the changed value is in place, so that a reader that sees the new count
		/// also sees the new value.
		///
		/// A wrapping add, one locked instruction: a checked add compiles to a loop of compare-and-swap with an
		/// overflow check (2^63 changes, where the stand-in flag starts, are never reached).
		package func advance() {
			count.wrappingAdd(1, ordering: .releasing)
		}
	}
}

/// A store that counts the changes of its own primitives, so that the package's counter also moves when they are
/// called past the package (`store.setStoredValue(_:forKey:)` is public). The store's runtime adopts the counter.
protocol CountsItsOwnChanges: Defaults.Store {
	var changeCounter: Defaults.ChangeCounter { get }
}
