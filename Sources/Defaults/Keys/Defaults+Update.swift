extension Defaults {
	/// Runs `transform` on the latest value of `key` and stores the result atomically; returns the new value.
	///
	/// Unlike `Defaults[.launchCount] += 1`, which reads and writes separately, no update is lost to another made at
	/// the same time:
	/// - **Threads**: updates of the same store from threads of this process run one after the other.
	/// - **Processes** (file stores): the update holds the settings file's cross-process lock while it reads the
	///   file as it is now (other processes' flushed writes included), runs `transform` and writes the file, so its
	///   result is in the file before any other process's update can read it. Many processes incrementing one key
	///   end on the exact total.
	/// - `InMemoryStore`, `UserDefaults` and your own stores: atomic among the threads of this process only.
	///
	/// An update is atomic against other updates, not against plain writes: a `Defaults[key] = value` made at the
	/// same time (in another process: flushed after the update) may replace the update's result, as any write would.
	///
	/// Observers of `key` hear exactly one change per update, even when `transform` leaves the value as it was. If
	/// `transform` throws, nothing is stored, no observer hears anything, and the error is rethrown.
	///
	/// **Synced keys** are updated against the remote, as the asynchronous form describes, while this thread waits
	/// (at most 20 seconds) and runs `transform`: on the main thread or a thread that runs no task. On a thread of
	/// Swift's concurrency pool (a synchronous function called from async code) the update throws
	/// ``SyncedUpdateError`` with reason `.needsAwait` instead: call it with `await` there. Top-level code in
	/// `main.swift` compiles `try await Defaults.update(…)` to this form.
	///
	/// `transform` may run more than once (it is retried for a synced key when another machine changed the value
	/// first), so it must have no side effects, and it must not read or write other keys through `Defaults` inside it: use
	/// the form that takes a list of keys to update several keys together. It runs while the store is held, so keep it short.
	/// An update started inside `transform`, or inside an observer of the update's change, throws
	/// ``UpdateError/Kind/nested``.
	///
	/// The cost: for a file store, a lock and a durable write of the file per update (a plain write costs a memory
	/// write, and reaches the file within 100 ms, coalesced with other writes); see <doc:AtomicUpdates>.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let launchCount = Key<Int>("launchCount", default: 0)
	/// }
	///
	/// let launches = try Defaults.update(.launchCount) { $0 += 1 }
	/// ```
	///
	/// - Throws: what `transform` throws, or ``UpdateError``: the file could not be locked, read or written, the new
	///   value has no stored form, or the update is nested in another; for a synced key ``SyncedUpdateError``.
	///   Nothing was stored then (see ``SyncedUpdateError/Reason-swift.enum/outcomeUnknown`` for the one exception).
	@discardableResult
	public static func update<Value: Serializable>(
		_ key: Key<Value>, _ transform: (inout Value) throws -> Void
	) throws -> Value {
		try updateWaitingForRemote([key]) { transaction in
			try transform(&transaction[key])
			return transaction[key]
		}
	}

	/// Runs `transform` on the latest values of `keys`, keys of one store, and stores what it writes atomically: a
	/// transaction.
	///
	/// Read and write the keys through the ``Transaction`` handed to `transform`; only the keys named here can be
	/// used. The keys written are stored together when `transform` returns, and their observers hear one change per
	/// key written; if `transform` throws, nothing is stored. What the update is atomic against, and what
	/// `transform` must not do, is as for `update(_:_:)` of one key. The keys are a list, written out or built at run
	/// time.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let checking = Key<Int>("checking", default: 100)
	/// 	static let savings = Key<Int>("savings", default: 0)
	/// }
	///
	/// try Defaults.update([.checking, .savings]) { accounts in
	/// 	accounts[.checking] -= 25
	/// 	accounts[.savings] += 25
	/// }
	/// ```
	///
	/// - Returns: what `transform` returns.
	/// - Throws: what `transform` throws, or ``UpdateError`` (also when `keys` is empty or its keys live in
	///   different stores).
	@discardableResult
	public static func update<Result>(
		_ keys: [Keys], _ transform: (inout Transaction) throws -> Result
	) throws -> Result {
		try updateWaitingForRemote(keys, transform)
	}

	/// The synchronous update: in the store, or for keys a remote updater (a sync engine) updates, against the remote
	/// while this thread waits, `transform` still running on this thread.
	static func updateWaitingForRemote<Result>(
		_ keys: [Keys], _ transform: (inout Transaction) throws -> Result
	) throws -> Result {
		guard let store = keys.first?.suite, keys.allSatisfy({ $0.suite === store }),
			let updater = keys[0].runtime.remoteUpdater(ofAnyOf: keys.map(\.name))
		else {
			return try updateLocally(keys, transform)
		}
		// Inside another update this thread holds its store, which the remote update may need to apply its value.
		guard UpdateScope.current == nil else {
			throw UpdateError(AtomicUpdateFailure.insideAnotherUpdate)
		}
		try refuseLockedKeys(keys, in: store)
		var results: [Result] = []
		let run = try updater.updateWaiting(keys.map(\.name), in: store) { storedForms in
			try runTransaction(keys, in: store, on: storedForms, transform, results: &results)
		}
		guard let run else {
			return try updateLocally(keys, transform)
		}
		return results[run]
	}

	/// One run of an update's closure on the remote's stored forms of `keys` (a name missing: nothing stored), for an
	/// update against the remote: appends the closure's result to `results` and returns the stored forms it leaves.
	/// The thread counts as updating `store` meanwhile, so an update started inside the closure throws
	/// ``UpdateError/Kind/nested``, as it does in a local update.
	static func runTransaction<Result>(
		_ keys: [Keys], in store: any Store, on storedForms: [String: Any],
		_ transform: (inout Transaction) throws -> Result, results: inout [Result]
	) throws -> [String: Any] {
		var transaction = Transaction(store: store, names: Set(keys.map(\.name)), storedForms: storedForms)
		let outer = UpdateScope.current
		UpdateScope.current = ObjectIdentifier(store)
		defer { UpdateScope.current = outer }
		let result = try transform(&transaction)
		if let failure = transaction.failure {
			throw failure
		}
		results.append(result)
		var updated = storedForms
		for change in transaction.changes {
			updated[change.key] = change.value
		}
		return updated
	}

	/// The update of one key in its own store, whatever the key's sync: what every form of `update` does for a key
	/// that is not synced.
	static func updateLocally<Value: Serializable>(
		_ key: Key<Value>, _ transform: (inout Value) throws -> Void
	) throws -> Value {
		try updateLocally([key]) { transaction in
			try transform(&transaction[key])
			return transaction[key]
		}
	}

	/// The update of `keys` in their store, whatever their sync.
	static func updateLocally<Result>(
		_ keys: [Keys], _ transform: (inout Transaction) throws -> Result
	) throws -> Result {
		guard let store = keys.first?.suite else {
			throw UpdateError(.noKeys, "An update was given no keys; nothing was changed.")
		}
		if let other = keys.first(where: { $0.suite !== store }) {
			throw UpdateError(
				.keysInSeveralStores,
				"The keys '\(keys[0].name)' and '\(other.name)' live in different stores, and an update covers keys of "
					+ "one store; nothing was changed.")
		}
		return try store.withUpdate {
			// Under the lock the write takes, which a change of the locks waits for too: a lock the administrator
			// adds while this update waits for the store is seen here, never after the write.
			try refuseLockedKeys(keys, in: store)
			var transaction = Transaction(store: store, names: Set(keys.map(\.name)))
			let result = try transform(&transaction)
			if let failure = transaction.failure {
				throw failure
			}
			return (transaction.changes, result)
		} apply: { changes in
			for change in changes {
				store.commit(change.value, forKey: change.key)
			}
		}
	}
}

extension Defaults {
	/// Throws ``UpdateError`` with kind `.locked` when an administrator locked one of `keys`: every form of `update`,
	/// the synced one included, refuses before it runs the closure.
	static func refuseLockedKeys(_ keys: [Keys], in store: any Store) throws(UpdateError) {
		try refuseLockedKeys(names: keys.map(\.name), in: store)
	}

	static func refuseLockedKeys(names: [String], in store: any Store) throws(UpdateError) {
		for name in names {
			do {
				try store.refuseLockedKey(name)
			} catch {
				throw UpdateError(.locked, error.description)
			}
		}
	}
}

extension Defaults.Store {
	/// Runs `transform` on the stored values of `names` (`nil` where nothing is stored) and stores the result
	/// atomically, as `Defaults.update(_:_:)` does for keys: for callers that know stored forms only (the
	/// `defaults` command). Only values `transform` changed are stored; a value set to `nil` is removed.
	///
	/// `transform` starts from what each key reads beneath launch arguments and locks (a system default included),
	/// as an increment must; with `ownValuesOnly` it starts from the values the store keeps itself, for edits of the
	/// user's file as it is (a rename, a removal, an import), where a value equal to a system default is still the
	/// user's to keep.
	package func updateStoredValues<Result>(
		_ names: [String], ownValuesOnly: Bool = false, _ transform: (inout [String: Any]) throws -> Result
	) throws -> Result {
		try updateStoredValues(namedUnderTheLock: { names }, ownValuesOnly: ownValuesOnly, transform)
	}

	/// ``updateStoredValues(_:ownValuesOnly:_:)`` of the keys `names` gives once the update holds the store (a file
	/// store's file locked and read again): for edits of keys found in the file, such as every key the user stored,
	/// which another process may add to until then.
	package func updateStoredValues<Result>(
		namedUnderTheLock names: () -> [String], ownValuesOnly: Bool = false,
		_ transform: (inout [String: Any]) throws -> Result
	) throws -> Result {
		try withUpdate {
			let names = names()
			var original: [String: Any] = [:]
			for name in names {
				original[name] = ownValuesOnly ? ownValue(forKey: name) : valueBeneathOverrides(forKey: name)
			}
			var values = original
			let result = try transform(&values)
			var changes: [StoredChangeOfUpdate] = []
			for name in names {
				let value = try values[name].map { try Defaults.PropertyList.normalize($0) }
				if !Defaults.PropertyList.isEqualOrBothAbsent(original[name], value) {
					changes.append((name, value))
				}
			}
			// Under the update's lock, as `Defaults.update` checks: the file must never take a value that memory, which
			// refuses a locked key, would not.
			try Defaults.refuseLockedKeys(names: changes.map(\.key), in: self)
			return (changes, result)
		} apply: { changes in
			for change in changes {
				commit(change.value, forKey: change.key)
			}
		}
	}
}
