import Foundation

// Remote to local: full reads of the prefix, the watch's events, and what a machine whose state file was lost takes.
extension SyncWorker {
	func readEverything() async throws {
		// Forgotten only once read and applied: a read that fails leaves them for the next try.
		let reading = names.withLock { $0.unread }
		let snapshot = try await remote.read(prefix: prefix)
		for description in snapshot.skipped where reportedUnreadable.insert("skipped: \(description)").inserted {
			Defaults.report(
				Defaults.Failure(
					keyName: prefix, reason: .decodingFailed,
					message: "A remote entry under '\(prefix)' could not be read and was skipped: \(description)."))
		}
		let synced = currentNames
		var seen: Set<String> = []
		var events: [Defaults.RemoteEvent] = []
		for entry in snapshot.entries {
			guard let name = name(ofRemoteKey: entry.key), synced.contains(name) else {
				continue
			}
			seen.insert(name)
			events.append(.put(entry))
		}
		let storedNames = Set(store.store.storedKeys())
		if let stateLoss {
			rebuildLostState(from: snapshot, synced: synced, storedNames: storedNames, reason: stateLoss)
		}
		// Deleted while this machine was not watching, with the deletion compacted away.
		for (name, record) in state.records where record.value != nil && !seen.contains(name) && synced.contains(name) {
			events.append(.delete(key: prefix + name, modRevision: snapshot.revision))
		}
		apply(events, storedNames: storedNames)
		state.revision = max(state.revision, snapshot.revision)
		saveState()
		names.withLock { $0.unread.subtract(reading) }
		publish()
	}

	/// The state file is gone: the machine rejoins as a new one would (it takes the remote's values, also the
	/// absence of a key another machine removed), except for the keys its queue says were changed here and not
	/// pushed, which are pushed against the remote's current revision, so that the edit is not dropped.
	private func rebuildLostState(
		from snapshot: Defaults.RemoteSnapshot, synced: Set<String>, storedNames: Set<String>, reason: String
	) {
		var current: [String: Defaults.RemoteEntry] = [:]
		for entry in snapshot.entries {
			if let name = name(ofRemoteKey: entry.key) {
				current[name] = entry
			}
		}
		var kept: [String] = []
		for name in synced.sorted() {
			if queue.names.contains(name) {
				let entry = current[name]
				state.records[name] = .init(value: entry?.value, modRevision: entry?.modRevision ?? 0)
				noteLocalChange(name)
				kept.append(name)
				continue
			}
			// Agreed on the local value, so that `apply` replaces it with the remote's like any remote change.
			let local = localValue(of: name, storedNames: storedNames)
			state.records[name] = .init(value: try? local.map { try SyncedValueCoding.encode($0) }, modRevision: 0)
		}
		stateLoss = nil
		Defaults.report(
			Defaults.Failure(
				keyName: prefix, reason: .storage,
				message:
					"The sync state file \(stateFile?.path ?? "") was lost (\(reason)). This machine took the remote values of '\(prefix)' as a new machine would"
					+ (kept.isEmpty
						? "."
						: ", except for its unpushed changes of \(kept.joined(separator: ", ")), which it pushes.")
			))
	}

	func receive(_ events: [Defaults.RemoteEvent]) {
		heardFromRemote()
		guard !events.isEmpty else {
			// The watch's first reply: it is running.
			return
		}
		compactedInARow = 0
		// Only events under the prefix move the revision: a gateway that sends others must not make a later resume
		// skip history.
		let mine = events.filter { name(ofRemoteKey: $0.key) != nil && $0.revision > 0 }
		apply(mine, storedNames: Set(store.store.storedKeys()))
		for event in mine {
			state.revision = max(state.revision, event.revision)
		}
		scheduleStateSave()
		publish()
	}

	func apply(_ events: [Defaults.RemoteEvent], storedNames: Set<String>) {
		let synced = currentNames
		// Kept current as values are applied: a batch may change one key twice, and the second change must see the
		// first as stored, or it takes it for a local edit and pushes it back (an echo, reported as a lost conflict).
		var storedNames = storedNames
		for event in events {
			let (key, value, revision) = (event.key, event.value, event.revision)
			guard let name = name(ofRemoteKey: key), synced.contains(name) else {
				continue
			}
			let record = state.records[name]
			// Seen already: this machine's own push coming back, or an older event.
			if let record, record.modRevision >= revision {
				continue
			}
			let local = localValue(of: name, storedNames: storedNames)
			// One of this machine's own pushes whose reply was lost, committed after all: agreed on it. A newer local
			// change goes out next, against this revision, instead of losing to this machine's own older write.
			if let record, record.isUnconfirmedPush(of: value, intervening: heldBackRemoteChanges[name]) {
				state.records[name] = .init(value: value, modRevision: revision)
				heldBackRemoteChanges[name] = nil
				if !Defaults.PropertyList.isEqualOrBothAbsent(local, value.flatMap(SyncedValueCoding.decode)) {
					noteLocalChange(name)
				}
				continue
			}
			// Changed here since the last agreement: its push (a compare-and-swap against the old revision) decides.
			if !isAgreed(local, forKey: name) {
				heldBackRemoteChanges[name] = event
				continue
			}
			heldBackRemoteChanges[name] = nil
			// Removed: deleted, or a tombstone, whose bytes the record keeps so that the next push names its revision.
			guard let value, !SyncedValueCoding.isRemoval(value) else {
				state.records[name] = .init(value: value, modRevision: revision)
				if local != nil {
					Defaults.SyncEngine.applyRemoteValue(nil, forKey: name, in: store.store)
					storedNames.remove(name)
				}
				continue
			}
			guard let stored = SyncedValueCoding.decode(value) else {
				state.records[name] = .init(
					value: value, modRevision: revision,
					keptLocalValue: local.flatMap { try? SyncedValueCoding.encode($0) },
					isUnreadable: true)
				reportUnreadable(name: name, key: key, revision: revision)
				continue
			}
			state.records[name] = .init(value: value, modRevision: revision)
			if !Defaults.PropertyList.isEqualOrBothAbsent(local, stored) {
				Defaults.SyncEngine.applyRemoteValue(stored, forKey: name, in: store.store)
				storedNames.insert(name)
			}
		}
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

	/// The values `name` held remotely after revision `revision` and before `last` (`nil`: removed), from the watch's
	/// history: what a push that lost to the change at `last` is checked against, since a local value among them is
	/// one this machine received, not an edit of its own that lost (its settings file reached the disk before its
	/// state file did, and it was killed in between). Empty when the history cannot be read within
	/// ``historyReadLimit`` (compacted, no answer): the loss is then reported.
	func remoteHistory(of name: String, after revision: Int64, before last: Int64) async -> [Data?] {
		guard revision > 0, last > revision + 1 else {
			return []
		}
		let key = prefix + name
		return await withTaskGroup(of: [Data?].self) { group in
			group.addTask { [remote] in
				var values: [Data?] = []
				do {
					for try await events in remote.watch(prefix: key, fromRevision: revision + 1) {
						for event in events where event.key == key && event.revision < last {
							values.append(event.value)
						}
						if events.contains(where: { $0.revision >= last }) {
							return values
						}
					}
				} catch {}
				return []
			}
			group.addTask {
				try? await Task.sleep(for: Self.historyReadLimit)
				return []
			}
			defer { group.cancelAll() }
			return await group.next() ?? []
		}
	}

	/// How long a lost push waits for the key's history (``remoteHistory(of:after:before:)``).
	static let historyReadLimit: Duration = .seconds(1)

	/// Once a key's record has moved (a push written, a conflict settled, a lost value put back): the remote change
	/// held back for it, if it is newer, is applied now like any remote change, since the watch will not deliver it
	/// again. An older one is already covered by the record.
	func applyHeldBackRemoteChange(of name: String) {
		guard let event = heldBackRemoteChanges.removeValue(forKey: name) else {
			return
		}
		guard event.revision > state.records[name]?.modRevision ?? 0 else {
			return
		}
		apply([event], storedNames: Set(store.store.storedKeys()))
	}

	private func reportUnreadable(name: String, key: String, revision: Int64) {
		guard reportedUnreadable.insert("\(name)@\(revision)").inserted else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: name, reason: .decodingFailed,
				message:
					"The remote value of '\(name)' (\(key), revision \(revision)) is not a synced stored form; it was left on the remote as it is, and the local value was kept."
			))
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
