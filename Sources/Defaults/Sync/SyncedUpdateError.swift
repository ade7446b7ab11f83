extension Defaults {
	/// Why an atomic update of a synced key did not go through.
	///
	/// An atomic update of a synced key is a compare-and-swap against the remote (etcd), so it needs the remote: it
	/// cannot be made offline and pushed later, as a plain write is. Except for
	/// ``Reason-swift.enum/outcomeUnknown``, an update that throws this changed nothing, locally or remotely, and
	/// can be tried again.
	///
	/// ```swift
	/// do {
	/// 	try await Defaults.update(.launchCount) { $0 += 1 }
	/// } catch let error as Defaults.SyncedUpdateError where error.reason == .unreachable {
	/// 	print("not counted: \(error)")  // nothing changed; try again later
	/// }
	/// ```
	public struct SyncedUpdateError: Error, Sendable, Equatable, CustomStringConvertible {
		/// What went wrong.
		public enum Reason: Sendable, Equatable {
			/// The remote could not be reached (or answered with an outage) before anything was sent: nothing
			/// changed.
			case unreachable
			/// A commit was sent and its answer lost, and the update ended before it could find out whether the
			/// commit went through: the remote could not be asked again in time, or the update stopped first (a later
			/// try was refused or read a value it could not decode, the closure threw, the task was cancelled, the
			/// synchronous form's time ran out). The update may have been committed. Nothing changed locally; if it
			/// was committed, its value arrives like any remote change. Trying again may apply the change twice.
			case outcomeUnknown
			/// Other machines changed the key before every one of the bounded tries could commit: nothing changed.
			case tooManyConflicts
			/// The remote value is not a synced stored form, so the closure could not be given it: nothing changed.
			case unreadableRemoteValue
			/// The remote refused the write (too large, no permission), or the closure's result is not a property
			/// list: nothing changed.
			case refused
			/// A local change of the key, made before the update, could not be pushed first (it stays queued, as
			/// plain writes do offline): nothing changed.
			case localChangeNotPushed
			/// The synchronous form of `Defaults.update` was called on a thread of Swift's concurrency pool (from a
			/// synchronous function that async code called), where waiting for the remote could starve the pool:
			/// nothing was started. Call it with `await` there.
			case needsAwait
		}

		/// The names of the keys the update was for (the caller named the keys).
		package let keyNames: [String]
		/// What went wrong.
		public let reason: Reason
		/// A sentence saying what went wrong and what changed: the ``description``.
		package let message: String

		package init(keyNames: [String], reason: Reason, message: String) {
			self.keyNames = keyNames
			self.reason = reason
			self.message = message
		}

		/// Whether the update certainly changed nothing, locally or remotely (every reason but
		/// ``Reason-swift.enum/outcomeUnknown``).
		package var changedNothing: Bool {
			reason != .outcomeUnknown
		}

		/// A sentence saying what went wrong and what changed.
		public var description: String {
			message
		}
	}
}
