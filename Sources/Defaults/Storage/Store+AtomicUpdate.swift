#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// A change an atomic update makes to one key: its new stored form, or `nil` to remove the stored value.
package typealias StoredChangeOfUpdate = (key: String, value: Any?)

/// Why the store refused or failed an atomic update: Storage's own error, which `Defaults.update` (Keys) reports as
/// its `UpdateError` of the same kind.
struct AtomicUpdateFailure: Error {
	enum Kind {
		/// An update was started inside another one on the same thread.
		case nested
		/// The store's file could not be locked, read or written.
		case storage
	}

	let kind: Kind
	/// What went wrong and what was left as it was, as a sentence.
	let message: String

	init(_ kind: Kind, _ message: String) {
		self.kind = kind
		self.message = message
	}
	/// The refusal of an update started inside another one on the same thread.
	static let insideAnotherUpdate = AtomicUpdateFailure(
		.nested,
		"An update was started inside another update on the same thread (in its closure, or in an observer of its "
			+ "change); nothing was changed by it.")
}

/// A store that makes its atomic updates itself, against other processes as well as other threads (the file store).
/// Other stores are held by a lock of this process kept with the store (`StoreAttachments.updateLock`).
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
	/// - Throws: `AtomicUpdateFailure` (`nested` when called inside an update on the same thread, `storage` when the
	///   file store could not lock, read or write its file), or what `body` throws; nothing is stored then.
	package func withAtomicUpdate<Result>(
		_ body: () throws -> (changes: [StoredChangeOfUpdate], result: Result),
		apply: ([StoredChangeOfUpdate]) -> Void
	) throws -> Result {
		guard UpdateScope.isAvailable else {
			throw AtomicUpdateFailure(
				.storage,
				"The process has no thread-specific key left (pthread_key_create failed), so an update cannot tell "
					+ "whether it runs inside another; nothing was changed.")
		}
		guard UpdateScope.current == nil else {
			throw AtomicUpdateFailure.insideAnotherUpdate
		}
		UpdateScope.current = ObjectIdentifier(self)
		defer { UpdateScope.current = nil }
		if let store = self as? any AtomicallyUpdatingStore {
			return try store.updateAtomically(body, apply: apply)
		}
		return try attachments.updateLock.withLock { _ in
			let (changes, result) = try body()
			apply(changes)
			return result
		}
	}
}

/// Which store the current thread is updating, if any: a thread holds at most one store for an update, so that two
/// updates can never wait for each other, and a store's flush on the updating thread knows not to wait for it.
package enum UpdateScope {
	/// `nil` when the process had used up its thread-specific keys (`PTHREAD_KEYS_MAX`) before its first update: then
	/// updates are refused with an error rather than the process trapping on resource exhaustion.
	private static let key: pthread_key_t? = {
		var key = pthread_key_t()
		return pthread_key_create(&key, nil) == 0 ? key : nil
	}()

	/// Whether updates can be scoped at all (see `key`).
	static var isAvailable: Bool { key != nil }

	/// The store the current thread is updating, or `nil`.
	static var current: ObjectIdentifier? {
		get {
			guard let key, let pointer = pthread_getspecific(key) else {
				return nil
			}
			return unsafeBitCast(pointer, to: ObjectIdentifier.self)
		}
		set {
			guard let key else {
				return
			}
			let pointer = newValue.map { unsafeBitCast($0, to: UnsafeMutableRawPointer.self) }
			pthread_setspecific(key, pointer)
		}
	}

	/// Whether the current thread is in the middle of an update of `store`.
	static func isUpdating(_ store: some Defaults.Store) -> Bool {
		current == ObjectIdentifier(store)
	}
}
