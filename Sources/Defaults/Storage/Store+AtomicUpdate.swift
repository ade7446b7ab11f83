#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// A change an atomic update makes to one key: its new stored form, or `nil` to remove the stored value.
package typealias StoredChangeOfUpdate = (key: String, value: Any?)

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
	/// 	print(error.kind, error.message)
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
			/// A synced key was updated without `await`: an update of a synced key is a compare-and-swap against the
			/// remote, which only the asynchronous form of `update` can wait for.
			case syncedKeyNeedsAwait
			/// The store's file could not be locked, read or written.
			case storage
		}

		/// What went wrong.
		public let kind: Kind
		/// What went wrong and what was left as it was, as a sentence.
		public let message: String

		/// The message.
		public var description: String { message }

		package init(_ kind: Kind, _ message: String) {
			self.kind = kind
			self.message = message
		}
	}
}

/// A store that makes its atomic updates itself, against other processes as well as other threads (the file store).
/// Other stores get a lock per store in this process (see `withAtomicUpdate(_:apply:)`).
package protocol AtomicallyUpdatingStore: Defaults.Store {
	/// Runs `body` while nothing else updates the store, makes the changes it returns durable, then calls `apply` with
	/// them, still holding the store.
	func updateAtomically<Result>(
		_ body: () throws -> (changes: [StoredChangeOfUpdate], result: Result),
		apply: ([StoredChangeOfUpdate]) -> Void
	) throws -> Result
}

extension Defaults.Store {
	/// The primitive beneath every atomic update: runs `body` on the store's latest values while no other update
	/// of the store runs, and stores the changes `body` returns before any other update can read them.
	///
	/// `body` reads the store as usual (the values are current: a file store has taken in other processes' writes
	/// first) and returns the changes as stored forms; it may throw, and then nothing is stored. The store makes the
	/// changes durable where it can (the file store writes its file), then `apply` puts them in through the
	/// package's write path, so that observers hear them; both run before the store is released.
	///
	/// Against what an update is atomic depends on the store: the file store holds its file's cross-process lock from
	/// the read to the write, so updates are atomic across processes; any other store is held by a lock of this
	/// process, so updates are atomic across its threads only. Plain writes do not wait for updates.
	///
	/// - Throws: ``Defaults/UpdateError`` (`nested` when called inside an update on the same thread, `storage` when the
	///   file store could not lock, read or write its file), or what `body` throws; nothing is stored then.
	package func withAtomicUpdate<Result>(
		_ body: () throws -> (changes: [StoredChangeOfUpdate], result: Result),
		apply: ([StoredChangeOfUpdate]) -> Void
	) throws -> Result {
		guard UpdateScope.current == nil else {
			throw Defaults.UpdateError(
				.nested,
				"An update was started inside another update on the same thread (in its closure, or in an observer of "
					+ "its change); nothing was changed by it.")
		}
		UpdateScope.current = ObjectIdentifier(self)
		defer { UpdateScope.current = nil }
		if let store = self as? any AtomicallyUpdatingStore {
			return try store.updateAtomically(body, apply: apply)
		}
		return try UpdateScope.lock(for: self).withLock { _ in
			let (changes, result) = try body()
			apply(changes)
			return result
		}
	}
}

/// Which store the current thread is updating, if any: a thread holds at most one store for an update, so that two
/// updates can never wait for each other, and a store's flush on the updating thread knows not to wait for it.
package enum UpdateScope {
	private static let key: pthread_key_t = {
		var key = pthread_key_t()
		let status = pthread_key_create(&key, nil)
		precondition(status == 0, "pthread_key_create failed: \(status)")
		return key
	}()

	/// Locks of this process for stores that do not update themselves, shared by stores whose identities fall in the
	/// same slot: a thread holds one at a time (nested updates are refused), so sharing cannot deadlock.
	private static let locks = (0..<16).map { _ in LockedState(()) }

	/// The store the current thread is updating, or `nil`.
	static var current: ObjectIdentifier? {
		get {
			guard let pointer = pthread_getspecific(key) else {
				return nil
			}
			return unsafeBitCast(pointer, to: ObjectIdentifier.self)
		}
		set {
			let pointer = newValue.map { unsafeBitCast($0, to: UnsafeMutableRawPointer.self) }
			pthread_setspecific(key, pointer)
		}
	}

	/// Whether the current thread is in the middle of an update of `store`.
	static func isUpdating(_ store: some Defaults.Store) -> Bool {
		current == ObjectIdentifier(store)
	}

	static func lock(for store: some Defaults.Store) -> LockedState<Void> {
		let slot = Int((UInt(bitPattern: ObjectIdentifier(store).hashValue) >> 4) % UInt(locks.count))
		return locks[slot]
	}
}
