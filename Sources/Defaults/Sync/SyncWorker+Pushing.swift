import Foundation

// Local to remote: which local changes are pushed, in transactions, and what a refused or conflicting push does.
extension SyncWorker {
	struct Push {
		let name: String
		/// The journal's highest line of the key when the pass read it: what the push settles once decided. For a
		/// value held here offered again, the line its mark carries (0: a put-back, see `SyncWorker.offer`).
		let sequence: Int
		/// The local value's bytes, or ``SyncedValueCoding/tombstone`` for a removal.
		let bytes: Data
		let expectedModRevision: Int64
		/// The state's revision when the pass read the key: the watch delivered nothing since while it is the same.
		var revisionSeen: Int64 = 0
	}

	/// What a push pass left undone, for ``SyncWorker/synchronize()``.
	struct PushPassOutcome {
		/// Changes that wait, still pending, without an error from the remote: the settings file could not be
		/// locked or written (reported), the sync state is lost and not rebuilt yet, or the sequences they would go
		/// out under are reserved in memory only (the state file could not be written; reported).
		var waits = false
		/// A value too large for the remote, kept on this machine only (reported): a push's, no longer pending, or a
		/// put-back's (``SyncWorker/readEverything(wakesPusher:known:)``).
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
	/// waits for it, then runs a pass of its own, so that what it wrote before calling still goes out. Passes of
	/// other processes of the settings file are waited for through the push lock.
	///
	/// - Returns: what the pass left undone.
	@discardableResult
	func pushPending() async throws -> PushPassOutcome {
		// A pass waited for here may keep a value that was pending when the caller came on this machine only (too
		// large for the remote): the caller's outcome says so too.
		var keptLocallyMeanwhile = false
		while let running = pushPassInFlight {
			if let outcome = try await outcome(of: running), outcome.keptLocally {
				keptLocallyMeanwhile = true
			}
			if pushPassInFlight == running {
				pushPassInFlight = nil
			}
		}
		let pass = Task { try await self.pushPendingPass() }
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

	/// What the pass `running` left undone once it ends (`nil` when it failed), waited for until the caller is
	/// cancelled, which ends the wait at once and leaves the pass alone: its own caller may still want it. Awaiting the
	/// pass's value directly would not end on cancellation, and `stop()` would wait out its bound for a pusher waiting
	/// for a pass of `synchronize()` that waits for the push lock.
	///
	/// - Throws: `CancellationError` when the caller is cancelled first.
	private func outcome(of running: Task<PushPassOutcome, any Error>) async throws -> PushPassOutcome? {
		let (ended, continuation) = AsyncStream.makeStream(of: PushPassOutcome?.self)
		Task {
			continuation.yield(try? await running.value)
			continuation.finish()
		}
		// The stream's iteration ends (with nothing) when the waiting task is cancelled.
		for await outcome in ended {
			return outcome
		}
		throw CancellationError()
	}

	/// One pass: the keys with a line in the journal that is not settled, each pushed against the revision this
	/// machine last agreed on (what the edit was made over: a received value is applied only to a key with nothing
	/// pending). Only recorded changes go out: a local value that differs from the agreed one with no line is not
	/// an edit of this machine.
	private func pushPendingPass() async throws -> PushPassOutcome {
		// Not against revisions of a remote that may have lost them (see `isRemoteVerified`). Counted first: offline,
		// the read fails, and a status line still shows what waits.
		var putBackKeptLocally = false
		if !isRemoteVerified {
			updatePendingCount(locked { local in state.pending(in: local.lines, among: currentNames).count })
			putBackKeptLocally = try await readEverything(wakesPusher: false)
		}
		let pushLock = try await takePushLock()
		defer { Defaults.SyncEngine.releasePushLock(pushLock) }
		// Nothing goes out before a lost state is rebuilt from the remote: the revisions to compare against are gone.
		guard stateLoss == nil else {
			let waiting = locked { local in state.pending(in: local.lines, among: currentNames).count }
			updatePendingCount(waiting)
			return PushPassOutcome(waits: (waiting ?? 1) > 0, keptLocally: putBackKeptLocally)
		}
		let synced = currentNames
		let collected: [Push]? = locked { local in
			var pushes: [Push] = []
			for (name, sequence) in state.pending(in: local.lines, among: synced).sorted(by: { $0.key < $1.key }) {
				let value = local.value(of: name)
				// Written back to the agreed value, or a crash between the line and the file: nothing to push. A
				// remote change that came while the key was pending was not applied: read it again. An earlier push
				// of the key whose reply was lost may still commit over the agreed revision: the record says that
				// this line was settled without a push, so that such a commit does not replace the local value. Not
				// a put-back's value, which the remote may never get otherwise: the line takes it out as an edit.
				if let record = state.records[name], !record.isPutBack, isAgreed(value, forKey: name) {
					state.settle(name, upTo: sequence)
					state.records[name]?.settledWithoutPush = sequence
					if state.revision > record.modRevision {
						toRefresh.insert(name)
					}
					continue
				}
				// Marked as this settings file's, so that the push is known as its own when it comes back, also
				// through another process of the file or after its reply was lost.
				let mark = state.machine.map { SyncedValueCoding.Mark(machine: $0, sequence: sequence) }
				guard let bytes = try? SyncedValueCoding.pushedBytes(of: value, mark: mark) else {
					state.settle(name, upTo: sequence)
					continue
				}
				pushes.append(
					Push(
						name: name, sequence: sequence, bytes: bytes,
						expectedModRevision: state.records[name]?.expectedModRevision ?? 0, revisionSeen: state.revision
					))
			}
			if let highest = pushes.map(\.sequence).max() {
				state.reserveSequences(through: highest)
			}
			return pushes
		}
		guard let collected else {
			return PushPassOutcome(waits: true, keptLocally: putBackKeptLocally)
		}
		// Before any request: offline, this is the count a status line shows.
		updatePendingCount(collected.count)
		var outcome = PushPassOutcome(keptLocally: putBackKeptLocally)
		let pushes = awaitingDurableReservation(collected, outcome: &outcome)
		guard !pushes.isEmpty else {
			try await refreshDecidedKeys()
			return outcome
		}
		for batch in Self.batches(of: pushes) {
			// All at once when none conflicts (the common case: many keys written at once); else one by one, so that
			// each conflict is settled on its own.
			if batch.count > 1, let revision = try await pushAll(batch) {
				locked { local in
					for push in batch {
						didWrite(push, at: revision, local: &local)
					}
				}
			} else {
				for push in batch {
					try await pushOne(push, outcome: &outcome)
				}
			}
		}
		try await refreshDecidedKeys()
		updatePendingCount(locked { local in state.pending(in: local.lines, among: currentNames).count })
		return outcome
	}

	/// The pushes whose sequences the state file reserves; the others wait (reported once), and the pass says so:
	/// while the state cannot be written the reservation is in memory only, and a process that ended (a crash) then
	/// lost it. The next run would give new changes the sequences of pushes it sent, and a push among them whose reply
	/// was lost, committed, would settle a new change that took its number (the journal's last line keeps them too,
	/// unless it is deleted; an in-memory journal starts after the state's reservation). Tried again after
	/// ``reservationRetryDelay``, and at every pass: each locked step writes the state again.
	private func awaitingDurableReservation(_ pushes: [Push], outcome: inout PushPassOutcome) -> [Push] {
		let ready = pushes.filter { $0.sequence <= durableReservation }
		guard ready.count < pushes.count else {
			isReservationWaitReported = false
			return pushes
		}
		outcome.waits = true
		if !isReservationWaitReported {
			isReservationWaitReported = true
			let waiting = pushes.filter { $0.sequence > durableReservation }.map(\.name)
			reportFailure(
				"The changes of \(waiting.joined(separator: ", ")) under '\(prefix)' wait: the sync state file \(stateFile?.path ?? "") could not be written, and the numbers they would go out under must be on disk first (a process ended meanwhile could give them to other changes). They go out once it can be written."
			)
		}
		Task { [weak self] in
			try? await Task.sleep(for: Self.reservationRetryDelay)
			await self?.wakeToPushAgain()
		}
		return ready
	}

	/// How long a push waiting for its reservation to be on disk waits before the state is written again.
	static let reservationRetryDelay = Duration.seconds(1)

	private func didWrite(_ push: Push, at revision: Int64, local: inout LocalSide) {
		heardFromRemote()
		agreeOnWrite(push, at: revision, local: &local)
		state.settle(push.name, upTo: push.sequence)
		// A full read while the push was on its way may have found a newer change, not applied to a pending key.
		// (The watch delivers the push's own echo before any later change, which is then applied.)
		if state.revision > revision {
			toRefresh.insert(push.name)
		}
	}

	/// Takes `push`, written at `revision`, for the key's agreed value, unless the record is newer already, or a later
	/// line of the key was settled without a push while it was on its way (another process of the settings file ran a
	/// pass once the push lock's wait ran out, or held a newer value as too large while a value held was offered
	/// again): the local value is the newer then, and goes out over it (`agreeOnOwnCommit`).
	private func agreeOnWrite(_ push: Push, at revision: Int64, local: inout LocalSide) {
		// A later refusal of a put-back of the key is a new loss of it on the remote: reported again.
		reportedTooLarge[push.name] = nil
		if (state.records[push.name]?.modRevision ?? 0) < revision {
			_ = agreeOnOwnCommit(of: push.name, bytes: push.bytes, at: revision, sequence: push.sequence, local: &local)
		}
	}

	/// Reads the keys a pass decided and marked (``toRefresh``) again and applies what the remote holds now: a
	/// change that came (through the watch or a full read) while a key was pending was not applied, and the watch
	/// does not deliver it again. A push among them that lost is reported once its winner is in the store.
	private func refreshDecidedKeys() async throws {
		let names = toRefresh
		let lost = lostAwaitingWinner
		guard !names.isEmpty else {
			return
		}
		// Kept for the next pass if the read fails.
		let snapshot = try await remote.read(prefix: prefix + (names.count == 1 ? names.first ?? "" : ""))
		let found = entriesByName(in: snapshot)
		// Kept for the next pass too when the settings file could not be locked or written: the step was not kept.
		let isDone = locked { local -> Bool in
			// A key the remote lacks is removed only if it held a value: one held here against no record (too
			// large, or a put-back not written yet) stays.
			apply(
				names.sorted().compactMap {
					found[$0].map { .put($0) }
						?? (state.records[$0]?.value == nil
							? nil : .delete(key: prefix + $0, modRevision: snapshot.revision))
				}, local: &local)
			for (name, discarded) in lost.sorted(by: { $0.key < $1.key }) {
				let record = state.records[name]
				let winner = record.flatMap { record in
					record.value.map {
						Defaults.RemoteEntry(key: prefix + name, value: $0, modRevision: record.modRevision)
					}
				}
				lostConflictsToReport.append((name, discarded, winner))
			}
			return true
		}
		guard isDone == true else {
			return
		}
		toRefresh.subtract(names)
		for name in lost.keys {
			lostAwaitingWinner[name] = nil
		}
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

	private func pushOne(_ push: Push, outcome: inout PushPassOutcome) async throws {
		let result: Defaults.RemoteWriteResult
		do {
			result = try await remote.compareAndSwap(
				key: prefix + push.name, value: push.bytes, expectedModRevision: push.expectedModRevision)
		} catch Defaults.RemoteServiceError.valueTooLarge(let reason) {
			try await holdLocally(push, reason: reason, outcome: &outcome)
			return
		}
		switch result {
		case .written(let revision):
			locked { local in didWrite(push, at: revision, local: &local) }
		case .conflict(let current):
			let isDecided = locked { local in
				settleConflict(of: push, current: current, local: &local)
			}
			if isDecided != true {
				outcome.goesOutAgain = true
			}
		}
	}

	/// The push's compare-and-swap failed: `current` is the key's remote record when etcd ran it.
	///
	/// - Returns: `false` when the conflict decided nothing and the local value goes out again at the next pass.
	private func settleConflict(of push: Push, current: Defaults.RemoteEntry?, local: inout LocalSide) -> Bool {
		let record = state.records[push.name]
		// Settled meanwhile by another pass of this settings file.
		if state.settledSequence(of: push.name) >= push.sequence {
			return true
		}
		// The agreement moved on while the push was on its way (the watch delivered this machine's own earlier push,
		// committed though its reply was lost): the push compared against a revision this machine no longer holds, so
		// it decided nothing. The line stays pending and goes out again, against the new revision.
		if (record?.expectedModRevision ?? 0) != push.expectedModRevision {
			wakeToPushAgain()
			return isAgreed(local.value(of: push.name), forKey: push.name)
		}
		// The remote holds a push of this settings file, by its mark: this very change or a later one (its reply was
		// lost, or another pass of the file pushed it), which settles the push; or an earlier one committed late,
		// after which the line goes out again against its revision.
		if let current, let mark = ownMark(of: current.value, local: local) {
			state.records[push.name] = .init(value: current.value, modRevision: current.modRevision)
			guard mark.sequence < push.sequence else {
				state.settle(push.name, upTo: push.sequence)
				return true
			}
			wakeToPushAgain()
			return isAgreed(local.value(of: push.name), forKey: push.name)
		}
		// A key this machine saw exist is gone, which no machine of this package does (a removal leaves a tombstone):
		// the remote may have lost its data before the watch said so (it delivered nothing since the pass began). Once
		// per connection, the next pass reads the remote first, which finds that out (`readEverything`); a key
		// deleted by another program loses there.
		if current == nil, record?.value != nil, state.revision == push.revisionSeen, !isMissingKeyChecked {
			isMissingKeyChecked = true
			isRemoteVerified = false
			wakeToPushAgain()
			return false
		}
		// A value another machine put back after the remote lost its data (sequence 0), not an edit: this edit, made
		// before it was seen, goes out again over it.
		if let current, let mark = SyncedValueCoding.mark(of: current.value), mark.sequence == 0 {
			state.records[push.name] = .init(value: current.value, modRevision: current.modRevision)
			wakeToPushAgain()
			return false
		}
		// Made without knowing the latest remote value: the remote value wins here too. The winner is the newest
		// remote change: the reply's, or, when the watch or a full read already went past it (a change it brought
		// then was not applied to the pending key), what the key holds when read again.
		let discarded = local.value(of: push.name)
		state.settle(push.name, upTo: push.sequence)
		// A change recorded after this push was read goes out next, against the winner: it was made later.
		if isPending(push.name, in: local) {
			state.records[push.name] = .init(value: current?.value, modRevision: current?.modRevision ?? 0)
			wakeToPushAgain()
		} else {
			// Taking the local value as agreed lets `apply` replace it like any remote change.
			state.records[push.name] = .init(
				value: try? discarded.map { try SyncedValueCoding.encode($0) }, modRevision: 0)
			if let current {
				apply([.put(current)], local: &local)
			}
		}
		guard let current, state.revision <= current.modRevision else {
			toRefresh.insert(push.name)
			lostAwaitingWinner[push.name] = .some(discarded)
			return true
		}
		// Told once the winner is in the store, so that a listener that reads the key finds it.
		lostConflictsToReport.append((push.name, discarded, current))
		return true
	}

	/// Writes `pushes` (values of keys a remote that lost its data lacks, see `rejoin`; or values held here, offered
	/// again, see `readEverything`) where the key's record is still the one each names: absent, for a put-back. A key
	/// another machine put back or changed first keeps that value, which is applied here: both held the same
	/// agreement, or it is an edit made on the new remote; over a value held, a later change, which replaces it like
	/// any later change (not another machine's put-back: a push's value held stays held against it, see `apply`). A
	/// write that lands is recorded as a push's is (`agreeOnWrite`): a newer value held here meanwhile stays held,
	/// against it, and one written back goes out over it. A value too large stays held locally (a put-back's reported
	/// once per value and engine; a push's was reported when it was held), and so does a push's held value offered
	/// again whose write fails otherwise (a large upload's timeout, a refusal; a transaction of such values that fails
	/// so sends each on its own): the read stands, and the next `synchronize()` offers it again.
	///
	/// - Returns: whether a value was too large, or a value held was not taken.
	func putBack(_ pushes: [Push]) async throws -> Bool {
		var keptLocally = false
		// Pushes' values held, offered again (their lines not 0), whose write fails otherwise than by a cancellation:
		// they stay held, and the read they are part of stands.
		func staysHeld(_ error: any Error, _ pushes: some Collection<Push>) -> Bool {
			pushes.allSatisfy { $0.sequence != 0 } && !(error is CancellationError) && !Task.isCancelled
		}
		for batch in Self.batches(of: pushes) {
			var written: Int64?
			do {
				written = batch.count > 1 ? try await pushAll(batch) : nil
			} catch let error where staysHeld(error, batch) {
				// Each on its own, as for a batch refused.
			}
			if let revision = written {
				locked { local in
					for push in batch {
						agreeOnWrite(push, at: revision, local: &local)
					}
				}
				continue
			}
			for push in batch {
				let result: Defaults.RemoteWriteResult
				do {
					result = try await remote.compareAndSwap(
						key: prefix + push.name, value: push.bytes, expectedModRevision: push.expectedModRevision)
				} catch Defaults.RemoteServiceError.valueTooLarge(let reason) {
					keptLocally = true
					// A push's value held was reported when it was held; a put-back's (line 0) at its first refusal
					// here, unless a change applied meanwhile replaced it in the record (the file's, read under the
					// lock): it is not kept then.
					var digest = Hasher()
					push.bytes.withUnsafeBytes { digest.combine(bytes: $0) }
					let hash = digest.finalize()
					if push.sequence == 0,
						locked({ _ in state.records[push.name]?.keptLocalValue == push.bytes }) == true,
						reportedTooLarge.updateValue(hash, forKey: push.name) != hash
					{
						reportTooLarge(push, reason: reason)
					}
					continue
				} catch let error where staysHeld(error, [push]) {
					keptLocally = true
					continue
				}
				locked { local in
					switch result {
					case .written(let revision):
						agreeOnWrite(push, at: revision, local: &local)
					case .conflict(let current):
						// Another value met: a later refusal is a new one.
						reportedTooLarge[push.name] = nil
						apply(current.map { [.put($0)] } ?? [], local: &local)
					}
				}
			}
		}
		return keptLocally
	}

	/// This value will never fit: say so and let the others through. The local value stays as it is, held against
	/// the remote's current record, so that the key syncs again as soon as either side changes it (a later remote
	/// change replaces it, like any later change; a later local change is pushed). Unless the remote's record is not
	/// the one the value was written over: its compare-and-swap would have failed too, and it is a conflict like any
	/// other (``settleConflict(of:current:local:)``). Unless another pass of this settings file decided the line
	/// meanwhile: its record stands.
	private func holdLocally(_ push: Push, reason: String, outcome: inout PushPassOutcome) async throws {
		let key = prefix + push.name
		let snapshot = try await remote.read(prefix: key)
		let current = snapshot.entries.first { $0.key == key }
		enum Decision {
			case held(isOlderThanTheWatch: Bool)
			case conflict(isDecided: Bool)
			case decidedMeanwhile
		}
		let decision = locked { local -> Decision in
			if state.settledSequence(of: push.name) >= push.sequence {
				return .decidedMeanwhile
			}
			if (current?.modRevision ?? 0) != push.expectedModRevision {
				return .conflict(isDecided: settleConflict(of: push, current: current, local: &local))
			}
			state.settle(push.name, upTo: push.sequence)
			// Held even when the watch delivered something newer while this read ran (another key's, or one of this
			// key passed over while its line was pending): left with its record, the key's older agreed value would
			// be put back over this one as if this were an outside edit.
			state.records[push.name] = .init(
				value: current?.value, modRevision: current?.modRevision ?? 0, keptLocalValue: push.bytes,
				isHeldLocally: true, settledWithoutPush: push.sequence)
			return .held(isOlderThanTheWatch: snapshot.revision < state.revision)
		}
		switch decision {
		case .decidedMeanwhile:
			return
		case .conflict(let isDecided):
			outcome.goesOutAgain = outcome.goesOutAgain || !isDecided
			return
		case .held(let isOlderThanTheWatch):
			// A newer change of this key, passed over while the push was pending, is not delivered again: the pass
			// ends with a read of the key, which applies it over the value held.
			if isOlderThanTheWatch {
				toRefresh.insert(push.name)
			}
		case nil:
			// The step was not kept (reported): the line stays pending and goes out again at the next pass, which
			// decides it; nothing is held yet.
			outcome.waits = true
			return
		}
		outcome.keptLocally = true
		reportTooLarge(push, reason: reason)
	}

	private func reportTooLarge(_ push: Push, reason: String) {
		reportFailure(
			of: push.name,
			"The value of '\(push.name)' (\(push.bytes.count) bytes stored) was not synced: the remote will not store a value this large (\(reason)). It is kept on this machine, and offered again at each synchronize() and the next start, until the remote takes it or the key changes again, here or on another machine."
		)
	}
}
