import Foundation

extension Defaults {
	/// A change of a key's value, as an observer of ``Defaults/observe(_:options:handler:)`` receives it.
	///
	/// Both values are decoded with the key's type; a value that is missing or does not decode is the key's default,
	/// so a reset reads as a change to the default.
	///
	/// ```swift
	/// Defaults.observe(.level) { change in
	/// 	print("level went from \(change.oldValue) to \(change.newValue)")
	/// }
	/// ```
	public struct KeyChange<Value: Serializable> {
		/// The value before the change.
		///
		/// For the ``ObservationOption/initial`` notification it equals ``newValue``.
		public let oldValue: Value

		/// The value after the change.
		///
		/// For a ``ObservationOption/prior`` notification it is the value about to be written.
		public let newValue: Value

		/// Whether this notification comes before the change is made (see ``ObservationOption/prior``).
		public let isPrior: Bool

		@usableFromInline package init(oldValue: Value, newValue: Value, isPrior: Bool = false) {
			self.oldValue = oldValue
			self.newValue = newValue
			self.isPrior = isPrior
		}

		/// The change as observers of `key` see it, decoded once per change for all of them.
		@inlinable
		init(_ change: StoredChange, of key: Key<Value>) {
			self = change.decoded(for: key) {
				key.change(decoding: change)
			}
		}
	}

	/// When an observer is called, besides after each change.
	public enum ObservationOption: Sendable, Hashable {
		/// Call the observer once right away, with the current value, before `observe` returns.
		case initial

		/// Call the observer also before each change, with ``KeyChange/isPrior`` set. Changes from outside the
		/// process are reported only after they happened.
		case prior
	}

	/// A set of ``ObservationOption``s; `observe` uses `[.initial]` unless told otherwise.
	public typealias ObservationOptions = Set<ObservationOption>
}

extension Defaults.KeyChange: Sendable where Value: Sendable {}

extension Defaults.KeyChange: Equatable where Value: Equatable {}
