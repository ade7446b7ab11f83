import Foundation

// An atomic read-modify-write of synced keys: a compare-and-swap loop against the remote, so that machines updating
// one key (a counter, a list) lose none of each other's updates. See Docs/Sync.md, "Atomic updates of a synced key".
extension Defaults.SyncEngine {
	/// What an atomic update of one key did.
	package enum AtomicUpdateOutcome {
		/// No engine syncs the key in that store: the caller updates it locally.
		case notSynced
		/// Committed on the remote and applied locally: the stored form committed (`nil`: the key is absent).
		case updated(Any?)
	}

	/// What an atomic update of several keys did.
	package enum AtomicUpdatesOutcome {
		/// No engine syncs any of the keys in that store: the caller updates them locally.
		case notSynced
		/// Committed on the remote in one transaction and applied locally: the stored forms committed, by key name
		/// (a name missing: the key is absent), and which run of the closure they came from (0 for the first), as
		/// an answer lost and found later may have committed an earlier run than the last.
		case updated([String: Any], run: Int)
	}

	/// How many compare-and-swaps an update tries before giving up on other machines' changes.
	static let atomicUpdateTries = 32
	/// How long an update whose commit went out without an answer keeps asking the remote whether it was committed.
	static let atomicUpdateResolveTime: Duration = .seconds(10)

	/// Runs `transform` on the remote's latest stored form of `name` and commits its result with a compare-and-swap
	/// against the key's revision, retrying on conflict; then applies the committed value locally as a remote change.
	///
	/// `transform` may run more than once (once per conflict); a throw from it changes nothing and is rethrown.
	///
	/// - Returns: ``AtomicUpdateOutcome/notSynced`` when no engine syncs `name` in `store` (nothing was done).
	/// - Throws: ``Defaults/SyncedUpdateError`` when the remote cannot be reached, keeps conflicting, or refuses.
	nonisolated(nonsending) package static func atomicUpdate(
		forKey name: String, in store: any Defaults.Store, _ transform: (Any?) throws -> Any?
	) async throws -> AtomicUpdateOutcome {
		let outcome = try await atomicUpdate(forKeys: [name], in: store) { values in
			var values = values
			values[name] = try transform(values[name])
			return values
		}
		switch outcome {
		case .notSynced: return .notSynced
		case .updated(let values, _): return .updated(values[name])
		}
	}

	/// Runs `transform` on the remote's latest stored forms of `names` (absent keys are missing from the dictionary)
	/// and commits the result for every name in one transaction that compares every key's revision; keys missing
	/// from the result are removed. The keys must all be synced by one engine of `store`.
	nonisolated(nonsending) package static func atomicUpdate(
		forKeys names: [String], in store: any Defaults.Store, _ transform: ([String: Any]) throws -> [String: Any]
	) async throws -> AtomicUpdatesOutcome {
		let names = Array(Set(names)).sorted()
		let engines = engines(of: store)
		let syncing = engines.filter { engine in names.contains { engine.names.contains($0) } }
		guard !syncing.isEmpty else {
			return .notSynced
		}
		// A running engine first: a stopped one (replaced by a later `configure`) may remain until released.
		guard
			let engine = syncing.first(where: { $0.isRunning && $0.names.isSuperset(of: names) })
				?? syncing.first(where: { $0.names.isSuperset(of: names) })
		else {
			throw Defaults.SyncedUpdateError(
				keyNames: names, reason: .refused,
				message:
					"The keys \(names.joined(separator: ", ")) are not all synced by one engine of their store, so they cannot be updated in one transaction; nothing was changed."
			)
		}
		let (values, run) = try await engine.atomicUpdate(names, transform)
		return .updated(values, run: run)
	}

	nonisolated(nonsending) private func atomicUpdate(
		_ names: [String], _ transform: ([String: Any]) throws -> [String: Any]
	) async throws -> (values: [String: Any], run: Int) {
		try await worker.prepareAtomicUpdate(of: names)
		var loop = AtomicUpdateLoop(names: names, prefix: prefix)
		do {
			return try await compareAndSwapUntilCommitted(&loop, transform)
		} catch  where loop.mayHaveCommitted && (error as? Defaults.SyncedUpdateError)?.reason != .outcomeUnknown {
			// The closure threw, the task was cancelled, or the update failed otherwise (a refusal, an unreadable
			// value) after a try whose answer was lost: that try may have been committed (or may still be), so
			// "nothing changed" would invite a retry that applies it twice.
			throw loop.unknownOutcome(after: error)
		}
	}

	nonisolated(nonsending) private func compareAndSwapUntilCommitted(
		_ loop: inout AtomicUpdateLoop, _ transform: ([String: Any]) throws -> [String: Any]
	) async throws -> (values: [String: Any], run: Int) {
		var isRemoteChecked = false
		var marks: [SyncedValueCoding.Mark] = []
		while true {
			let known = await worker.knownRevision()
			let snapshots: [Defaults.RemoteSnapshot]
			do {
				snapshots = try await loop.keys.asyncMap { key in try await remote.read(prefix: key) }
				// An earlier try went through after all (its answer was lost, or said "conflict"): that was the update.
				if let committed = try loop.committedAttempt(in: snapshots) {
					await worker.agreeOnAtomicUpdate(committed.current)
					return (committed.attempt.values, committed.attempt.run)
				}
				// A remote below the revision the state knows lost its data (the watch may not have said so yet): the
				// full read that finds it out puts back the values every machine held (see `rejoin`), and the update
				// reads again.
				if !isRemoteChecked, (snapshots.map(\.revision).min() ?? known) < known {
					try await worker.readEverything(known: known)
					isRemoteChecked = true
					continue
				}
			} catch let error as SyncWorker.StateOfAnotherPrefix {
				// Another prefix's engine took the settings file's state since the update began: refused, as before it.
				await worker.didDisconnect(error)
				throw Defaults.SyncedUpdateError(
					keyNames: loop.names, reason: .refused,
					message:
						"The update of \(AtomicUpdateLoop.quoted(loop.names)) was not made: \(error). Nothing was changed."
				)
			} catch let error as Defaults.RemoteServiceError {
				try loop.readFailed(error)
				try await loop.backOff()
				continue
			}
			try loop.checkConflicts()
			let current = try loop.currentValues(in: snapshots)
			loop.willRunClosure()
			let updated = try transform(current.values)
			if marks.isEmpty {
				marks = try await worker.marksForUpdate(of: loop.names)
			}
			let attempt = try loop.attempt(writing: updated, over: current, mark: marks.removeFirst())
			let revision: Int64?
			do {
				revision = try await remote.compareAndSwap(all: attempt.remoteWrites)
			} catch let error as Defaults.RemoteServiceError {
				try loop.commitFailed(error, attempt)
				try await loop.backOff()
				continue
			}
			guard let revision else {
				loop.conflicted()
				try await loop.backOff()
				continue
			}
			await worker.agreeOnAtomicUpdate(
				attempt.writes.map { Defaults.RemoteEntry(key: $0.key, value: $0.bytes, modRevision: revision) })
			return (attempt.values, attempt.run)
		}
	}
}

extension Array {
	/// The elements transformed one after another, in order.
	func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
		var results: [T] = []
		results.reserveCapacity(count)
		for element in self {
			results.append(try await transform(element))
		}
		return results
	}
}
