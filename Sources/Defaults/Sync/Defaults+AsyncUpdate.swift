// The asynchronous forms of `Defaults.update`: an update of a synced key goes to its sync engine, whose
// compare-and-swap against the remote has to wait for the network; any other key is updated in its store. They live
// in Sync, the one layer that knows both.
extension Defaults {
	/// Runs `transform` on the latest value of `key` and stores the result atomically; returns the new value.
	///
	/// The form of `update(_:_:)` for asynchronous code, with the same guarantees and the same rules for
	/// `transform` (it may run more than once, so no side effects, and no reads or writes of other keys through
	/// `Defaults` inside it).
	///
	/// **Synced keys.** For a key synced through a ``SyncEngine`` (or `Defaults.iCloud`), the update is a
	/// compare-and-swap against the remote: `transform` runs on the remote's latest value, the result is committed
	/// only if nobody changed the key meanwhile, and otherwise `transform` runs again on the newer value (a bounded
	/// number of times). Machines updating one key lose none of each other's updates. The committed value is then
	/// stored locally, and observers hear it as they hear any remote change. Such an update needs the remote: when it
	/// cannot be reached, it throws ``SyncedUpdateError`` and changes nothing, locally or remotely (plain writes stay
	/// offline-first). The update runs in the caller's isolation, so `transform` may use the state of a `@MainActor`
	/// caller. (The synchronous form updates a synced key the same way, waiting on the calling thread; top-level code
	/// compiles `try await Defaults.update` to it.)
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let sessions = Key<Int>("sessions", default: 0)
	/// }
	///
	/// func startSession() async throws {
	/// 	try await Defaults.update(.sessions) { $0 += 1 }
	/// }
	/// ```
	///
	/// - Throws: what `transform` throws, ``UpdateError``, for a synced key ``SyncedUpdateError``, or
	///   `CancellationError` when the calling task is cancelled first; nothing was stored then (see
	///   ``SyncedUpdateError/Reason-swift.enum/outcomeUnknown`` for the one exception).
	@discardableResult
	nonisolated(nonsending) public static func update<Value: Serializable>(
		_ key: Key<Value>, _ transform: (inout Value) throws -> Void
	) async throws -> Value {
		try await update([key]) { transaction in
			try transform(&transaction[key])
			return transaction[key]
		}
	}

	/// Runs `transform` on the latest values of `keys`, keys of one store, and stores what it writes atomically.
	///
	/// The form of `update(_:_:)` for a list of keys, for asynchronous code. Synced keys are updated as the form for
	/// one key describes, in one transaction on the remote that compares every key; the keys must then all be synced
	/// by one engine.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let drafts = Key<Int>("drafts", default: 1)
	/// 	static let sent = Key<Int>("sent", default: 0)
	/// }
	///
	/// func send() async throws {
	/// 	try await Defaults.update([.drafts, .sent]) { mail in
	/// 		mail[.drafts] -= 1
	/// 		mail[.sent] += 1
	/// 	}
	/// }
	/// ```
	///
	/// - Throws: what `transform` throws, ``UpdateError``, for synced keys ``SyncedUpdateError``, or
	///   `CancellationError` when the calling task is cancelled first; nothing was stored then.
	@discardableResult
	nonisolated(nonsending) public static func update<Result>(
		_ keys: [Keys], _ transform: (inout Transaction) throws -> Result
	) async throws -> Result {
		guard let store = keys.first?.suite, keys.allSatisfy({ $0.suite === store }) else {
			// No keys, or keys of several stores: the local update says which, in its error.
			return try updateLocally(keys, transform)
		}
		try refuseLockedKeys(keys, in: store)
		// One result per run of the closure: the one returned is that of the run the remote committed, which after an
		// answer lost and found later may be an earlier run than the last.
		var results: [Result] = []
		let outcome = try await SyncEngine.atomicUpdate(forKeys: keys.map(\.name), in: store) { storedForms in
			try runTransaction(keys, in: store, on: storedForms, transform, results: &results)
		}
		switch outcome {
		case .notSynced:
			return try updateLocally(keys, transform)
		case .updated(_, let run):
			// A committed run returned its result (a run that threw committed nothing).
			return results[run]
		}
	}
}
