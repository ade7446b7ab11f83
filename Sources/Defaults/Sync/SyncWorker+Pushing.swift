import Foundation

// Local to remote: which local changes are pushed, in transactions, and what a refused or conflicting push does.
extension SyncWorker {
	struct Push {
		let name: String
		let generation: Int
		/// The local value's bytes, or ``SyncedValueCoding/tombstone`` for a removal.
		let bytes: Data
		let expectedModRevision: Int64
		/// Whether the local value may be one this machine received rather than an edit: a change the engine found by
		/// itself (not written through Defaults here, not in the queue, not recorded by `defaults`), as at a start
		/// after a kill that left the settings file newer than the state file. If it loses, the key's history tells.
		var mayBeReceived = false
	}

	/// What a push pass left undone, for ``SyncWorker/synchronize(localChanges:)``.
	struct PushPassOutcome {
		/// Changes that wait, still pending, without an error from the remote: the settings file could not be
		/// written (reported), or the sync state is lost and not rebuilt yet.
		var waits = false
		/// A value too large for the remote, kept on this machine only (reported); it is no longer pending.
		var keptLocally = false
		/// Changes whose push decided nothing (the revision moved on while it was on its way): they go out again at
		/// the next pass.
		var goesOutAgain = false
	}

	/// How many more passes `synchronize()` runs for pushes that decided nothing, before it says that not everything
	/// went out: each such push met this machine's own earlier push, committed late, and another could meet the next.
	static let extraSynchronizePasses = 3

	/// How many keys go into one transaction: etcd refuses more than 128 operations in one by default.
	static let pushBatchSize = 100
	/// Well under etcd's default request limit (1.5 MiB) and its gRPC message limit (2 MiB).
	static let pushBatchBytes = 512 << 10
	/// How many synced keys may be found gone at once, without a removal through the package here or in the queue,
	/// and still be pushed as removals (`defaults delete` of a key or two while the app did not run). More at once is
	/// taken for a settings file that lost them: nothing is pushed, the keys get their synced values back, and a
	/// failure names them.
	static let inferredRemovalLimit = 2

	/// `pushes` in transactions of at most ``pushBatchSize`` keys and ``pushBatchBytes`` bytes of values.
	static func batches(of pushes: [Push]) -> [ArraySlice<Push>] {
		var batches: [ArraySlice<Push>] = []
		var start = 0
		var bytes = 0
		for (index, push) in pushes.enumerated() {
			let size = push.bytes.count
			if index > start, index - start == pushBatchSize || bytes + size > pushBatchBytes {
				batches.append(pushes[start..<index])
				start = index
				bytes = 0
			}
			bytes += size
		}
		if start < pushes.count {
			batches.append(pushes[start...])
		}
		return batches
	}

	/// Pushes what is pending, one pass at a time.
	///
	/// The session's loop, `synchronize()` and the exit push all call it, and the actor lets them interleave at every
	/// `await`. Two passes pushing one key against one revision would race: the second would meet the first's commit,
	/// take it for another machine's, and drop a local change made since as lost. A caller that finds a pass under way
	/// waits for it, then runs a pass of its own, so that what it wrote before calling still goes out.
	///
	/// - Returns: what the pass left undone.
	@discardableResult
	func pushPending(localChanges: LocalChanges) async throws -> PushPassOutcome {
		// A pass waited for here may keep a value that was pending when the caller came on this machine only (too
		// large for the remote): the caller's outcome says so too.
		var keptLocallyMeanwhile = false
		while let running = pushPassInFlight {
			if let outcome = try? await running.value, outcome.keptLocally {
				keptLocallyMeanwhile = true
			}
			if pushPassInFlight == running {
				pushPassInFlight = nil
			}
		}
		let pass = Task { try await self.pushPendingPass(localChanges: localChanges) }
		pushPassInFlight = pass
		defer {
			if pushPassInFlight == pass {
				pushPassInFlight = nil
			}
		}
		var outcome = try await withTaskCancellationHandler {
			try await pass.value
		} onCancel: {
			pass.cancel()
		}
		outcome.keptLocally = outcome.keptLocally || keptLocallyMeanwhile
		return outcome
	}

	private func pushPendingPass(localChanges: LocalChanges) async throws -> PushPassOutcome {
		let changes = localChanges.pendingChanges()
		// Nothing goes out before a lost state is rebuilt from the remote: the revisions to compare against are gone.
		guard !changes.isEmpty, stateLoss == nil else {
			updatePendingCount(stateLoss == nil ? 0 : localChanges.pendingCount)
			return PushPassOutcome(waits: !changes.isEmpty)
		}
		// The values about to be pushed reach the settings file first: a machine killed after the push must not
		// restart with an older local value and take it for a newer edit. Nothing goes out while they cannot.
		guard localValuesAreDurable() else {
			updatePendingCount(localChanges.pendingCount)
			return PushPassOutcome(waits: true)
		}
		let synced = currentNames
		let storedNames = Set(store.store.storedKeys())
		var pushes: [Push] = []
		var inferredRemovals: [(name: String, generation: Int)] = []
		// Changed, but not written through Defaults here nor queued: another process's change, or a value this machine
		// may have received (``Push/mayBeReceived``). The queue file says which another process made on purpose.
		var foundHere: Set<String> = []
		for (name, change) in changes.sorted(by: { $0.key < $1.key }) {
			guard synced.contains(name) else {
				localChanges.forget(name, upTo: change.generation)
				continue
			}
			let local = localValue(of: name, storedNames: storedNames)
			let agreed = state.agreedLocalValue(forKey: name)
			if Defaults.PropertyList.isEqualOrBothAbsent(local, agreed) && heldBackRemoteChanges[name] == nil {
				localChanges.forget(name, upTo: change.generation)
				queue.names.remove(name)
				continue
			}
			let isFoundHere = !change.isWrittenHere && !queue.names.contains(name)
			if isFoundHere {
				foundHere.insert(name)
			}
			if local == nil, agreed != nil, isFoundHere {
				inferredRemovals.append((name, change.generation))
				continue
			}
			pushes.append(
				push(name, generation: change.generation, bytes: try SyncedValueCoding.pushedBytes(of: local)))
		}
		// One read of the queue file for both: removals another process (`defaults delete`) made on purpose, and found
		// values that are edits made with `defaults write`, not values received.
		let recordedElsewhere = foundHere.isEmpty ? [] : namesRecordedElsewhere(among: foundHere)
		for index in pushes.indices where foundHere.contains(pushes[index].name) {
			pushes[index].mayBeReceived = !recordedElsewhere.contains(pushes[index].name)
		}
		for removal in inferredRemovals where recordedElsewhere.contains(removal.name) {
			pushes.append(push(removal.name, generation: removal.generation, bytes: SyncedValueCoding.tombstone))
		}
		inferredRemovals.removeAll { recordedElsewhere.contains($0.name) }
		if !inferredRemovals.isEmpty {
			if inferredRemovals.count > Self.inferredRemovalLimit
				|| Defaults.SyncEngine.isSettingsFileLost(for: store.store)
			{
				restoreLostValues(inferredRemovals, localChanges: localChanges)
			} else {
				pushes += inferredRemovals.map {
					push($0.name, generation: $0.generation, bytes: SyncedValueCoding.tombstone, mayBeReceived: true)
				}
			}
		}
		clearSettingsFileLossOnceRestored(synced: synced)
		// Before any request: offline, this is the count a status line shows.
		updatePendingCount(pushes.count)
		guard !pushes.isEmpty else {
			saveQueue()
			return PushPassOutcome()
		}
		// Recorded before the requests go out: the queue, so that a lost state file does not drop these changes, and
		// each push as unconfirmed, so that etcd committing one whose reply is lost is recognised as this machine's.
		queue.names.formUnion(pushes.map(\.name))
		for push in pushes {
			state.notePushSent(push.bytes, expectedModRevision: push.expectedModRevision, forKey: push.name)
		}
		saveState()
		var outcome = PushPassOutcome()
		for batch in Self.batches(of: pushes) {
			// All at once when none conflicts (the common case: many keys written at once); else one by one, so that
			// each conflict is settled on its own.
			if batch.count > 1, let revision = try await pushAll(batch) {
				for push in batch {
					didWrite(push, at: revision, localChanges: localChanges)
				}
			} else {
				for push in batch {
					try await pushOne(push, localChanges: localChanges, outcome: &outcome)
				}
			}
			saveState()
		}
		updatePendingCount(localChanges.pendingCount)
		return outcome
	}

	/// A push of `bytes` for `name`, against the revision this machine last agreed on.
	private func push(_ name: String, generation: Int, bytes: Data, mayBeReceived: Bool = false) -> Push {
		Push(
			name: name, generation: generation, bytes: bytes,
			expectedModRevision: state.records[name]?.expectedModRevision ?? 0, mayBeReceived: mayBeReceived)
	}

	/// Keys gone from the store without anyone removing them here: the settings file lost them. The remote keeps
	/// them and so does this machine again, from what it last agreed on (a newer remote value follows as usual).
	private func restoreLostValues(_ removals: [(name: String, generation: Int)], localChanges: LocalChanges) {
		for removal in removals {
			Defaults.SyncEngine.applyRemoteValue(
				state.agreedLocalValue(forKey: removal.name), forKey: removal.name, in: store.store)
			localChanges.forget(removal.name, upTo: removal.generation)
			// A remote change held back while the key looked changed here is newer than what was put back.
			applyHeldBackRemoteChange(of: removal.name)
		}
		let names = removals.map(\.name).joined(separator: ", ")
		Defaults.report(
			Defaults.Failure(
				keyName: prefix, reason: .storage,
				message:
					"\(removals.count) synced keys of '\(prefix)' were gone from the local store at once without being removed through Defaults (\(names)): the settings file looks lost or replaced, so no removal was pushed and their synced values were put back. Remove them through Defaults to remove them everywhere."
			))
	}

	private func didWrite(_ push: Push, at revision: Int64, localChanges: LocalChanges) {
		heardFromRemote()
		state.records[push.name] = .init(value: push.bytes, modRevision: revision)
		if localChanges.forget(push.name, upTo: push.generation) {
			queue.names.remove(push.name)
		}
		// Another machine's change the watch delivered while this push was on its way is newer than the write.
		applyHeldBackRemoteChange(of: push.name)
	}

	/// The batch in one transaction; `nil` when a key conflicts or the remote refuses the whole (too large, or a key it
	/// will not take), so that each is pushed on its own.
	private func pushAll(_ batch: ArraySlice<Push>) async throws -> Int64? {
		do {
			return try await remote.compareAndSwap(
				all: batch.map {
					Defaults.RemoteWrite(
						key: prefix + $0.name, value: $0.bytes, expectedModRevision: $0.expectedModRevision)
				})
		} catch let error as Defaults.RemoteServiceError {
			// Too large, or refused as a whole: each key on its own says which one it is. An outage stays an outage.
			if case .unreachable = error {
				throw error
			}
			return nil
		}
	}

	private func pushOne(_ push: Push, localChanges: LocalChanges, outcome: inout PushPassOutcome) async throws {
		let result: Defaults.RemoteWriteResult
		do {
			result = try await remote.compareAndSwap(
				key: prefix + push.name, value: push.bytes, expectedModRevision: push.expectedModRevision)
		} catch Defaults.RemoteServiceError.valueTooLarge(let reason) {
			try await holdLocally(push, reason: reason, localChanges: localChanges)
			outcome.keptLocally = true
			return
		}
		switch result {
		case .written(let revision):
			didWrite(push, at: revision, localChanges: localChanges)
		case .conflict(let current):
			// A push of a value that may have been received, lost against the revision it named (not its own lost
			// push coming back): what the key held between that revision and the winner tells.
			var received: [Data?] = []
			if push.mayBeReceived, let current, let record = state.records[push.name],
				record.expectedModRevision == push.expectedModRevision,
				!record.isUnconfirmedPush(of: current.value, intervening: heldBackRemoteChanges[push.name])
			{
				// Up to the winner settling uses: the watch may have delivered a change newer than the reply's.
				let winner = max(current.modRevision, heldBackRemoteChanges[push.name]?.revision ?? 0)
				received = await remoteHistory(of: push.name, after: record.modRevision, before: winner)
			}
			if try !settleConflict(of: push, current: current, received: received, localChanges: localChanges) {
				outcome.goesOutAgain = true
			}
		}
	}

	/// The push's compare-and-swap failed: `current` is the key's remote record when etcd ran it; `received`, values
	/// the key held remotely between this machine's record and `current`.
	///
	/// - Returns: `false` when the conflict decided nothing and the local value, not the agreed one, goes out again at
	///   the next pass.
	private func settleConflict(
		of push: Push, current: Defaults.RemoteEntry?, received: [Data?], localChanges: LocalChanges
	) throws -> Bool {
		let record = state.records[push.name]
		// The agreement moved on while the push was on its way (the watch delivered this machine's own earlier push,
		// committed though its reply was lost): the push compared against a revision this machine no longer holds, so
		// it decided nothing. The local value goes out again at the next pass, against the new revision.
		if (record?.expectedModRevision ?? 0) != push.expectedModRevision {
			noteLocalChange(push.name)
			return isLocalValueAgreedNow(push.name)
		}
		// This machine's own earlier push, committed though its reply was lost: agreed on it, and the newer local
		// value goes out against its revision at the next pass.
		if let record,
			record.isUnconfirmedPush(of: current?.value, intervening: heldBackRemoteChanges[push.name])
		{
			state.records[push.name] = .init(
				value: current?.value, modRevision: current?.modRevision ?? max(1, state.revision))
			noteLocalChange(push.name)
			applyHeldBackRemoteChange(of: push.name)
			return isLocalValueAgreedNow(push.name)
		}
		// Made without knowing the latest remote value: the remote value wins here too. The winner is the newest
		// remote change this machine knows of: the reply's, or one the watch delivered while the push was on its way
		// (the reply may describe an older state, and the watch does not deliver a change twice).
		let storedNames = Set(store.store.storedKeys())
		let local = localValue(of: push.name, storedNames: storedNames)
		let heldBack = heldBackRemoteChanges.removeValue(forKey: push.name)
		var winner: Defaults.RemoteEvent =
			current.map { .put($0) } ?? .delete(key: prefix + push.name, modRevision: max(1, state.revision))
		if let heldBack, current == nil || heldBack.revision >= current?.modRevision ?? 0 {
			winner = heldBack
		}
		localChanges.forget(push.name, upTo: nil)
		queue.names.remove(push.name)
		// Taking the local value as agreed lets `apply` replace it like any remote change.
		state.records[push.name] = .init(
			value: try local.map { try SyncedValueCoding.encode($0) }, modRevision: 0)
		apply([winner], storedNames: storedNames)
		// A value this machine received and never agreed on (its state file lagged its settings file) lost nothing.
		// Only for a change the engine found by itself: an edit made here is reported even when the key held its
		// value in between (a Bool edited to true loses to a false that came after a true).
		if push.mayBeReceived, received.contains(where: { Self.isSameValue(local, asRemote: $0) }) {
			return true
		}
		reportLostConflict(
			name: push.name, discarded: local,
			winner: winner.value.map { .init(key: winner.key, value: $0, modRevision: winner.revision) })
		return true
	}

	/// Whether the local value of `name`, read now, is the agreed one: a change noted again then has nothing to push,
	/// and the next pass only forgets it.
	private func isLocalValueAgreedNow(_ name: String) -> Bool {
		isAgreed(localValue(of: name, storedNames: Set(store.store.storedKeys())), forKey: name)
	}

	/// This value will never fit: say so and let the others through. The local value stays as it is, held against
	/// the remote's current record, so that the key syncs again as soon as either side changes it (a later remote
	/// change replaces it, like any later change; a later local change is pushed).
	private func holdLocally(_ push: Push, reason: String, localChanges: LocalChanges) async throws {
		let key = prefix + push.name
		let snapshot = try await remote.read(prefix: key)
		let current = snapshot.entries.first { $0.key == key }
		localChanges.forget(push.name, upTo: push.generation)
		queue.names.remove(push.name)
		// Unless the watch delivered something newer while this read ran: then the key stays marked stale, and its
		// next push settles it as a conflict.
		if snapshot.revision >= state.revision {
			state.records[push.name] = .init(
				value: current?.value, modRevision: current?.modRevision ?? 0, keptLocalValue: push.bytes,
				isHeldLocally: true)
			heldBackRemoteChanges[push.name] = nil
		}
		Defaults.report(
			Defaults.Failure(
				keyName: push.name, reason: .storage,
				message:
					"The value of '\(push.name)' (\(push.bytes.count) bytes stored) was not synced: the remote will not store a value this large (\(reason)). It is kept on this machine until the key changes again, here or on another machine."
			))
	}
}
