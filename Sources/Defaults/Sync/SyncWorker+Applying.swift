import Foundation

// Remote to local: full reads of the prefix, the watch's events, and what a machine whose state file was lost takes.
// Every value is applied under the settings file's lock, with the state every process of the file shares: a value
// at a revision the state already holds (another process applied it, or something newer) is not applied again, so
// the file never goes back.
extension SyncWorker {
	/// - Parameters:
	///   - wakesPusher: whether to wake the session's pusher afterwards; not for a caller that pushes next anyway (a
	///     signal left pending would cut the run loop's next wait before a retry short).
	///   - known: a revision this machine saw before the read began (by default the state file's): a read below it
	///     is of a remote that lost its data. Taken before the read, since another process of the settings file may
	///     move the shared state past the read's revision while it is on its way.
	/// - Returns: whether a value put back was too large for the remote, and is kept on this machine only (reported).
	@discardableResult
	func readEverything(wakesPusher: Bool = true, known: Int64? = nil) async throws -> Bool {
		// The file's, not only this process's view of it: an epoch (or a revision) another process of the file took
		// since this one's last locked step is one the remote held before this read, and a wipe since is noticed by
		// it (Docs/Sync.md, "A remote that lost its data").
		let before = stateBeforeRead()
		// Not a read of this prefix for another's state: it would be applied against that prefix's records.
		try checkPrefix(of: before)
		let (known, knownEpoch) = (known ?? before.revision, before.epoch)
		// Forgotten only once read and applied: a read that fails leaves them for the next try.
		let reading = names.withLock { $0.unread }
		let offering = heldToOffer
		let snapshot = try await remote.read(prefix: prefix)
		for description in snapshot.skipped where reportedUnreadable.insert("skipped: \(description)").inserted {
			reportFailure(
				reason: .decodingFailed,
				"A remote entry under '\(prefix)' could not be read and was skipped: \(description).")
		}
		let synced = currentNames
		let epoch = snapshot.entries.first { $0.key == prefix + Self.epochName }
		let current = entriesByName(in: snapshot)
		var putBacks: [Push] = []
		var lostRevision: Int64?
		let loss = stateLoss
		let applied: Void? = locked { local in
			// A state with a revision was rebuilt already, by another process of the settings file (this process's
			// loss was noticed before that one saved it): rebuilt again, it would take the local values for agreed
			// and let this read's older values over what that process applied since.
			if let loss, state.revision == 0 {
				putBacks = rebuildLostState(from: current, synced: synced, local: &local, reason: loss)
			} else if let reason = lostRemoteReason(snapshot, epoch: epoch, known: known, knownEpoch: knownEpoch) {
				// A revision this remote never reached, or an epoch it lost: it is not the remote the state knows
				// (wiped, replaced, or restored from an older snapshot; etcd keeps its cluster id across a wipe).
				lostRevision = state.revision
				putBacks = rejoin(current, reason: reason, synced: synced, local: &local)
			} else {
				// Values held here offered again, each as the write it was, against the record it is held against:
				// of the keys read for the first time (a put-back that failed, or whose process ended before it was
				// written; a push too large for the remote an earlier run held) and of those a `synchronize()` offers
				// (`heldToOffer`). Not one whose record etcd moved on from: this read applies etcd's newer value.
				putBacks = reading.union(offering).intersection(synced).sorted().compactMap { name in
					guard let record = state.records[name], (current[name]?.modRevision ?? 0) == record.modRevision,
						!isPending(name, in: local)
					else {
						return nil
					}
					return Self.offer(of: name, held: record)
				}
			}
			// From here on the step's state is one to keep (`locked` saves and compacts only then).
			stateLoss = nil
			// A key the remote lacks and the state holds a value of was deleted while this machine was not watching,
			// with the deletion compacted away.
			let events = synced.sorted().compactMap { name -> Defaults.RemoteEvent? in
				current[name].map { .put($0) }
					?? (state.records[name]?.value == nil
						? nil : .delete(key: prefix + name, modRevision: snapshot.revision))
			}
			apply(events, local: &local)
			state.revision = max(state.revision, snapshot.revision)
			// A key synced for the first time, which the remote does not hold: its local value goes out.
			local.record(
				reading.sorted().filter { name in
					state.records[name] == nil && local.value(of: name) != nil && !isPending(name, in: local)
						&& !putBacks.contains(where: { $0.name == name })
				})
			noteSyncedKeysTheRemoteLacks(synced, current: current, local: &local)
			putBackOutsideEdits(synced: synced, local: &local)
		}
		guard applied != nil else {
			// A rebuild not kept (the step failed, `locked` restored the state in memory) is made again by the next
			// read, unless the state file was written before the settings file failed: the next read then takes that
			// state as rebuilt, and what this step received comes with later reads.
			stateLoss = loss
			// Another engine took the state for its prefix while this read was on its way.
			try checkPrefix(of: stateBeforeRead())
			throw Defaults.RemoteServiceError.unreachable(
				"nothing received was applied: the settings file could not be locked or written, or its sync journal not read (reported)"
			)
		}
		var keptLocally = false
		if let lostRevision {
			// The state keeps the old revision until the values are back, so that a read after a failure here finds
			// the lost remote again and puts them back then.
			keptLocally = try await putBack(putBacks)
			locked { _ in
				if state.revision == lostRevision {
					state.revision = snapshot.revision
				}
			}
		} else if !putBacks.isEmpty {
			// A lost state's keys the remote holds nothing of; a failure here leaves them held as put back, which the
			// next read of them puts back again.
			keptLocally = try await putBack(putBacks)
		}
		await settleEpoch(epoch, rejoined: lostRevision != nil, knownEpoch: knownEpoch)
		// The remote is the one the state knows, or rejoined: a remote found lost again is another outage.
		isRejoinReported = false
		isRemoteVerified = true
		names.withLock { $0.unread.subtract(reading) }
		heldToOffer.subtract(offering)
		// Keys newly synced may have gone into the journal, and lines of other processes may wait.
		if wakesPusher {
			wakeToPushAgain()
		}
		publish()
		return keptLocally
	}

	/// The state as the file holds it now (written whole by a rename, so it is read without the lock), or this
	/// process's when the file cannot be read or is older than the memory (see ``SyncWorker/isStateUnsaved``).
	func stateBeforeRead() -> SyncState {
		guard !isStateUnsaved, case .state(let onDisk) = SyncState.load(from: stateFile) else {
			return state
		}
		return onDisk
	}

	/// Gives a synced key the remote lacks (read, and not applied: no record yet) a record of that absence, once it is
	/// absent locally too or its change is recorded: the shared state then says that a process of the settings file
	/// syncs it, and the compaction of another process that does not keeps its lines (`compactJournal`). Without the
	/// record, that compaction dropped the line of a change made between this first read and its push, which then
	/// never went out. A local value with no line (its line could not be written) gets none: it would be put back as
	/// an outside edit.
	private func noteSyncedKeysTheRemoteLacks(
		_ synced: Set<String>, current: [String: Defaults.RemoteEntry], local: inout LocalSide
	) {
		for name in synced.sorted()
		where state.records[name] == nil && current[name] == nil
			&& (local.value(of: name) == nil || isPending(name, in: local))
		{
			state.records[name] = .init(value: nil, modRevision: 0)
		}
	}

	/// A synced key whose local value is not the agreed one, with no change recorded: not an edit of this machine
	/// (a text editor, a restored or lost settings file). It is never pushed; it gets the agreed value back (for a
	/// value held on this machine, as too large or as a put-back not known to be written, the value held), and a
	/// report says how to keep such a change.
	private func putBackOutsideEdits(synced: Set<String>, local: inout LocalSide) {
		var putBack: [String] = []
		for (name, record) in state.records.sorted(by: { $0.key < $1.key })
		where synced.contains(name) && !isPending(name, in: local) && !record.isUnreadable {
			let value = local.value(of: name)
			let agreed = state.agreedLocalValue(forKey: name)
			guard !Defaults.PropertyList.isEqualOrBothAbsent(value, agreed) else {
				continue
			}
			local.received[name] = .some(agreed)
			putBack.append(name)
		}
		guard !putBack.isEmpty else {
			return
		}
		reportFailure(
			"The synced keys \(putBack.joined(separator: ", ")) of '\(prefix)' were changed in the settings file without Defaults or the defaults command (an editor, a restored or lost file), so the change was not pushed and their synced values were put back. Write them through Defaults or `defaults write` to change them everywhere."
		)
	}

	/// The state file is gone: the machine rejoins as a new one would (it takes the remote's values, also the
	/// absence of a key another machine removed, which leaves a tombstone), except for the keys the journal says were
	/// changed here and not pushed, which are pushed against the remote's current revision, so that the edit is not
	/// dropped. A key the remote holds nothing of, not even a tombstone, keeps its local value, which is put back
	/// (created only while the key is still absent, as a new machine's first value would be).
	///
	/// - Returns: the put-backs, to send once the lock is released.
	private func rebuildLostState(
		from current: [String: Defaults.RemoteEntry], synced: Set<String>, local: inout LocalSide, reason: String
	) -> [Push] {
		var kept: [String] = []
		var putBacks: [Push] = []
		for name in synced.sorted() {
			if isPending(name, in: local) {
				let entry = current[name]
				state.records[name] = .init(value: entry?.value, modRevision: entry?.modRevision ?? 0)
				kept.append(name)
				continue
			}
			guard current[name] != nil else {
				putBacks += putBackPush(of: name, local: local)
				continue
			}
			// Agreed on the local value, so that `apply` replaces it with the remote's like any remote change.
			state.records[name] = .init(
				value: try? local.value(of: name).map { try SyncedValueCoding.encode($0) }, modRevision: 0)
		}
		recordPendingKeysOfOtherProcesses(current, synced: synced, local: local)
		let putBackNames = putBacks.map(\.name).joined(separator: ", ")
		reportFailure(
			"The sync state file \(stateFile?.path ?? "") was lost (\(reason)). This machine took the remote values of '\(prefix)' as a new machine would"
				+ (kept.isEmpty
					? "."
					: ", except for its unpushed changes of \(kept.joined(separator: ", ")), which it pushes.")
				+ (putBacks.isEmpty
					? "" : " It puts back its values of \(putBackNames), which the remote holds nothing of."))
		return putBacks
	}

	/// The remote lost what it held (Docs/Sync.md, "A remote that lost its data"): every key of the state is taken
	/// from what the remote holds now, except that a change recorded here and not pushed is pushed against it (an
	/// edit), and a value this machine holds of a key the remote lacks is put back (returned, to push once the lock is
	/// released). Names another process of this settings file syncs are taken too, since that process finds the state
	/// already rejoined, except a push's value held here (of any process of the file), which is held against what the
	/// remote holds and offered over it, as a pending change is pushed.
	private func rejoin(
		_ current: [String: Defaults.RemoteEntry], reason: String, synced: Set<String>, local: inout LocalSide
	) -> [Push] {
		// Heard from the remote that was lost and not applied yet: applied now, they would take old values with
		// revisions above the new remote's, and its changes up to those revisions would be skipped as seen.
		receivedEvents = []
		var putBacks: [Push] = []
		var edits: [String] = []
		for name in synced.union(state.records.keys).sorted() {
			let entry = current[name]
			if isPending(name, in: local) {
				// A record of no value where the remote lacks the key, as a rebuild gives: compaction keeps its line.
				state.records[name] = .init(value: entry?.value, modRevision: entry?.modRevision ?? 0)
				edits.append(name)
				continue
			}
			guard let entry else {
				putBacks += putBackPush(of: name, local: local)
				continue
			}
			// A push's value held here is a change not taken yet, as a pending one is an edit: held against what
			// etcd holds now (another machine's put-back, a restored record), and offered over it; also one
			// another process of the file holds, which finds the state rejoined and does not do it again.
			if let record = state.records[name], record.isHeldLocally == true, !record.isPutBack {
				putBacks += holdAgain(name, against: entry.value, at: entry.modRevision)
				continue
			}
			guard synced.contains(name) else {
				// Another process's key: taken here, since `apply` takes only this engine's.
				state.records[name] = .init(value: entry.value, modRevision: entry.modRevision)
				if SyncedValueCoding.isRemoval(entry.value) {
					local.received[name] = .some(nil)
				} else if let stored = SyncedValueCoding.decode(entry.value) {
					local.received[name] = stored
				}
				continue
			}
			// Agreed on the local value, so that `apply` replaces it with the remote's like any remote change.
			state.records[name] = .init(
				value: try? local.value(of: name).map { try SyncedValueCoding.encode($0) }, modRevision: 0)
		}
		recordPendingKeysOfOtherProcesses(current, synced: synced, local: local)
		if !isRejoinReported {
			isRejoinReported = true
			let putBackNames = putBacks.map(\.name).joined(separator: ", ")
			reportFailure(
				"The remote of '\(prefix)' is not the one this machine synced with: \(reason) (a wiped or replaced cluster, or a restore from an older snapshot). This machine puts back its values of the keys the remote lacks"
					+ (putBackNames.isEmpty ? " (none)" : " (\(putBackNames))")
					+ (edits.isEmpty ? "" : ", pushes its unpushed changes of \(edits.joined(separator: ", "))")
					+ ", and takes the remote's values of the others.")
		}
		return putBacks
	}

	/// The put-back of `name`'s local value, a key the remote holds nothing of and with no change pending (to send once
	/// the lock is released), marked as put back (sequence 0), not as an edit: none for a key without one (its record
	/// is forgotten). A value held here (a put-back not known to be written, a push too large for the lost remote) is
	/// held against the key's absence now, and goes as the write it was (``offer(of:held:)``).
	///
	/// Until it is written the key is held locally with it, against no remote record: a record, so that another
	/// process's compaction keeps the line of a write made meanwhile (else the next full read took the write for an
	/// outside edit), and one the local value agrees with. One that fails stays, and goes again (`readEverything`)
	/// with the value held: a local value that differs with no line, or none, is an outside change, which
	/// `putBackOutsideEdits` puts back.
	private func putBackPush(of name: String, local: LocalSide) -> [Push] {
		if state.records[name]?.isHeldLocally == true {
			return holdAgain(name, against: nil, at: 0)
		}
		let mark = state.machine.map { SyncedValueCoding.Mark(machine: $0, sequence: 0) }
		guard let value = local.value(of: name), let bytes = try? SyncedValueCoding.pushedBytes(of: value, mark: mark)
		else {
			state.records[name] = nil
			return []
		}
		state.records[name] = .init(value: nil, modRevision: 0, keptLocalValue: bytes, isHeldLocally: true)
		return [Push(name: name, sequence: 0, bytes: bytes, expectedModRevision: 0)]
	}

	/// Keeps the value held in `name`'s record held, now against the remote's `value` at `revision` (`nil` at 0: the
	/// key's absence), to be offered over it as the write it was.
	///
	/// - Returns: its offer.
	@discardableResult
	func holdAgain(_ name: String, against value: Data?, at revision: Int64) -> [Push] {
		state.records[name]?.value = value
		state.records[name]?.modRevision = revision
		return state.records[name].flatMap { Self.offer(of: name, held: $0) }.map { [$0] } ?? []
	}

	/// The value held here in `record` (too large for the remote, or a put-back not known to be written), offered
	/// again as the write it was: its bytes, the line its mark carries (0 for a put-back), against the record it is
	/// held against.
	static func offer(of name: String, held record: SyncState.Record) -> Push? {
		guard record.isHeldLocally == true, let bytes = record.keptLocalValue else {
			return nil
		}
		return Push(
			name: name, sequence: SyncedValueCoding.mark(of: bytes)?.sequence ?? 0, bytes: bytes,
			expectedModRevision: record.expectedModRevision)
	}

	/// The changes of names another process of this settings file syncs, after a rebuild or a rejoin made here: that
	/// process finds the state rebuilt or rejoined and does not do it again, so their records come from here, the
	/// remote's, for its pushes to be compared with (and for compaction here to keep their lines).
	private func recordPendingKeysOfOtherProcesses(
		_ current: [String: Defaults.RemoteEntry], synced: Set<String>, local: LocalSide
	) {
		let named = Set(local.lines.compactMap(\.k)).subtracting(synced)
		for name in state.pending(in: local.lines, among: named).keys.sorted() {
			let entry = current[name]
			state.records[name] = .init(value: entry?.value, modRevision: entry?.modRevision ?? 0)
		}
	}

	func receive(_ events: [Defaults.RemoteEvent]) {
		// Not once the engine stopped: the next start's watch resumes from the saved revision and delivers them again.
		// An application scheduled before is a step under way, which `stop()` waits for.
		guard backgroundSteps.begin() else {
			return
		}
		var isHandedOver = false
		defer {
			if !isHandedOver {
				backgroundSteps.end()
			}
		}
		heardFromRemote()
		guard !events.isEmpty else {
			// The watch's first reply: it is running.
			return
		}
		compactedInARow = 0
		// Only events under the prefix move the revision: a gateway that sends others must not make a later resume
		// skip history.
		receivedEvents += events.filter { name(ofRemoteKey: $0.key) != nil && $0.revision > 0 }
		// A burst of messages is applied in one step under the lock (one write of the state and of the settings
		// file): once no message came for a moment, and at most a little after the first.
		guard !isApplyScheduled else {
			return
		}
		isApplyScheduled = true
		// The step counted above goes on in the task, which ends it once the events are applied.
		isHandedOver = true
		Task {
			defer { self.backgroundSteps.end() }
			let started = ContinuousClock.now
			var count = -1
			while count != self.receivedEvents.count, ContinuousClock.now - started < Self.receiveDelayLimit {
				count = self.receivedEvents.count
				try? await Task.sleep(for: Self.receiveDelay)
			}
			self.applyReceivedEvents()
		}
	}

	/// How long the watch's messages gather before they are applied, after the last one and after the first.
	static let receiveDelay: Duration = .milliseconds(50)
	static let receiveDelayLimit: Duration = .milliseconds(500)

	func applyReceivedEvents() {
		isApplyScheduled = false
		let events = receivedEvents
		receivedEvents = []
		// Not applied (the settings file could not be written): a later resume of the watch delivers them again.
		locked { local in
			apply(events, local: &local)
			for event in events {
				state.revision = max(state.revision, event.revision)
			}
		}
		publish()
	}

	/// Applies remote changes (inside ``locked(_:)``): a key with a change recorded and not pushed keeps it, and its
	/// push decides (the remote change is held back for it); any other key takes the remote value.
	func apply(_ events: [Defaults.RemoteEvent], local: inout LocalSide) {
		let synced = currentNames
		for event in events {
			let (key, value, revision) = (event.key, event.value, event.revision)
			guard let name = name(ofRemoteKey: key), synced.contains(name) else {
				continue
			}
			let record = state.records[name]
			// Seen already: this machine's own push coming back, an older event, or one another process of this
			// settings file applied.
			if let record, record.modRevision >= revision {
				continue
			}
			// A push of this settings file, by its mark, whose reply was lost (or is on its way): agreed on it, and the
			// changes it carried are settled. A newer recorded change goes out next, against this revision, instead
			// of losing to this machine's own older write.
			if let mark = ownMark(of: value, local: local) {
				let isAgreed = agreeOnOwnCommit(
					of: name, bytes: value, at: revision, sequence: mark.sequence, local: &local)
				state.settle(name, upTo: mark.sequence)
				guard isAgreed else {
					continue
				}
				// An update's commit (this process's or another's of the file) brings a value the file may not
				// hold yet; a push's is the file's already.
				if !isPending(name, in: local), !Self.isSameValue(local.value(of: name), asRemote: value) {
					local.received[name] = .some(value.flatMap(SyncedValueCoding.decode))
				}
				continue
			}
			// Changed here and not pushed: its push (a compare-and-swap against the old revision) meets this change
			// and decides; the key is read again then (`refresh`), since this change is not delivered twice.
			if isPending(name, in: local) {
				continue
			}
			// Another machine's put-back (line 0) over a push's value held here: not a change, and the value held goes
			// out over it, as an edit that meets one does (`settleConflict`). Held against it now, and offered again.
			if let record, record.isHeldLocally == true, !record.isPutBack,
				SyncedValueCoding.mark(of: value)?.sequence == 0
			{
				holdAgain(name, against: value, at: revision)
				continue
			}
			let current = local.value(of: name)
			// Removed: deleted, or a tombstone, whose bytes the record keeps so that the next push names its revision.
			guard let value, !SyncedValueCoding.isRemoval(value) else {
				state.records[name] = .init(value: value, modRevision: revision)
				if current != nil {
					local.received[name] = .some(nil)
				}
				continue
			}
			guard let stored = SyncedValueCoding.decode(value) else {
				state.records[name] = .init(
					value: value, modRevision: revision,
					keptLocalValue: current.flatMap { try? SyncedValueCoding.encode($0) },
					isUnreadable: true)
				reportUnreadable(name: name, key: key, revision: revision)
				continue
			}
			state.records[name] = .init(value: value, modRevision: revision)
			if !Defaults.PropertyList.isEqualOrBothAbsent(current, stored) {
				local.received[name] = stored
			}
		}
	}

	/// Takes a commit of this settings file's own (`bytes` at `revision`, carrying line `sequence`: a push's reply or
	/// echo, an update's) as the key's agreed value, unless a later line of the key was settled without a push while
	/// it was in doubt (its reply lost, or still on its way): the local value is the newer then, and is recorded to go
	/// out again over it. A value held then (too large) is that newer value, unless the commit is that value (the key
	/// written back to it): held again, against the commit, and offered over it as the write it was (no new line, so
	/// not reported again; a local value changed meanwhile with no line is an outside edit, which gets it back). If
	/// the local value cannot be recorded (the journal could not be written), the commit is left unapplied: the record
	/// stays the value the local one agrees with, so that no full read puts the older value back over it, and the next
	/// full read meets the commit again.
	///
	/// - Returns: whether the commit is the agreed value now.
	func agreeOnOwnCommit(
		of name: String, bytes: Data?, at revision: Int64, sequence: Int, local: inout LocalSide
	) -> Bool {
		if (state.records[name]?.settledWithoutPush ?? 0) > sequence, !isPending(name, in: local) {
			if state.records[name]?.isHeldLocally == true {
				// The commit of the value held itself (the key written back to it meanwhile): agreed, held no more. A
				// value held that cannot be read is no match for anything, a removal included.
				let held = state.agreedLocalValue(forKey: name)
				if held == nil || !Self.isSameValue(held, asRemote: bytes) {
					holdAgain(name, against: bytes, at: revision)
					return false
				}
			} else if !Self.isSameValue(local.value(of: name), asRemote: bytes) {
				if !local.record([name]).isEmpty {
					state.records[name] = .init(value: bytes, modRevision: revision)
					wakeToPushAgain()
				}
				return false
			}
		}
		state.records[name] = .init(value: bytes, modRevision: revision)
		return true
	}

	/// Whether `local` is what the remote bytes `remote` hold (both removed, or a readable value equal to it).
	static func isSameValue(_ local: Any?, asRemote remote: Data?) -> Bool {
		if SyncedValueCoding.isRemoval(remote) {
			return local == nil
		}
		guard let local, let stored = remote.flatMap(SyncedValueCoding.decode) else {
			return false
		}
		return Defaults.PropertyList.isEqual(local, stored)
	}

	/// The mark of `bytes` if it is this machine's: its id, and a sequence this machine's journal has issued. A
	/// sequence it never issued is another machine's that holds a copy of this state (a copied folder, a state file
	/// restored from a backup), whose pushes would otherwise settle this machine's changes: this machine takes a
	/// new id, so that neither takes the other's pushes for its own again, and a failure says so once.
	func ownMark(of bytes: Data?, local: LocalSide) -> SyncedValueCoding.Mark? {
		guard let mark = SyncedValueCoding.mark(of: bytes), mark.machine == state.machine else {
			return nil
		}
		let issued = max(local.lines.last?.s ?? 0, state.settled?.values.max() ?? 0)
		guard mark.sequence > issued else {
			return mark
		}
		state.machine = SyncState.newMachineID()
		reportFailure(
			"The remote under '\(prefix)' holds a change marked with this machine's sync id and a number it never gave a change (\(mark.sequence), its last is \(issued)): another machine syncs with a copy of this machine's state \(stateFile?.path ?? "") (a copied folder or a restored backup). This machine now syncs under a new id."
		)
		return nil
	}

	private func reportUnreadable(name: String, key: String, revision: Int64) {
		guard reportedUnreadable.insert("\(name)@\(revision)").inserted else {
			return
		}
		reportFailure(
			of: name, reason: .decodingFailed,
			"The remote value of '\(name)' (\(key), revision \(revision)) is not a synced stored form; it was left on the remote as it is, and the local value was kept."
		)
	}
}

extension Defaults.RemoteEvent {
	var key: String {
		switch self {
		case .put(let entry): entry.key
		case .delete(let key, _): key
		}
	}

	/// The bytes written; `nil` for a removal.
	var value: Data? {
		switch self {
		case .put(let entry): entry.value
		case .delete: nil
		}
	}

	var revision: Int64 {
		switch self {
		case .put(let entry): entry.modRevision
		case .delete(_, let revision): revision
		}
	}
}
