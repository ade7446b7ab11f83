// The error of `Defaults.update`, in the layer that raises it: the update's own refusals here, and the store's
// (a nested update, a file that could not be locked, read or written) translated from Storage's
// `AtomicUpdateFailure`.

extension Defaults {
	/// Why an atomic update changed nothing.
	///
	/// An error the update's closure throws is rethrown as it is; this is for everything else. Whatever the error,
	/// the update stored nothing and no observer heard of it.
	///
	/// ```swift
	/// do {
	/// 	try Defaults.update(.launchCount) { $0 += 1 }
	/// } catch let error as Defaults.UpdateError {
	/// 	print(error.kind, error)
	/// }
	/// ```
	public struct UpdateError: Error, Sendable, CustomStringConvertible {
		/// What went wrong, in a form code can switch over.
		public enum Kind: Sendable, Equatable {
			/// An update was started inside another one on the same thread: in an update's closure, or in an observer
			/// that the update's change called. Waiting for the outer update would never end.
			case nested
			/// The keys of one update live in different stores; an update covers keys of one store.
			case keysInSeveralStores
			/// An update over a list of keys was given none.
			case noKeys
			/// A new value has no stored form (its bridge refused it).
			case encodingFailed
			/// The stored value of a key the update read does not decode (the message says why): it is left as it
			/// is rather than replaced by a value computed from the key's default.
			case undecodableValue
			/// The store's file could not be locked, read or written.
			case storage
			/// An administrator locked one of the keys (``Defaults/isLocked(_:)``).
			case locked
		}

		/// What went wrong.
		public let kind: Kind
		/// What went wrong and what was left as it was, as a sentence: the ``description``.
		package let message: String

		/// What went wrong and what was left as it was, as a sentence.
		public var description: String { message }

		package init(_ kind: Kind, _ message: String) {
			self.kind = kind
			self.message = message
		}
	}
}

extension Defaults.UpdateError {
	/// The update's report of the store's refusal or failure.
	init(_ failure: AtomicUpdateFailure) {
		switch failure.kind {
		case .nested: self.init(.nested, failure.message)
		case .storage: self.init(.storage, failure.message)
		}
	}
}

extension Defaults.Store {
	/// `withAtomicUpdate(_:apply:)`, with the store's failures reported as ``Defaults/UpdateError``.
	func withUpdate<Result>(
		_ body: () throws -> (changes: [StoredChangeOfUpdate], result: Result),
		apply: ([StoredChangeOfUpdate]) -> Void
	) throws -> Result {
		do {
			return try withAtomicUpdate(body, apply: apply)
		} catch let failure as AtomicUpdateFailure {
			throw Defaults.UpdateError(failure)
		}
	}
}
