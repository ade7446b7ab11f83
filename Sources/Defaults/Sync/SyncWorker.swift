import Foundation
import Synchronization

/// The part of a ``Defaults/SyncEngine`` that talks to the remote: one actor, so that pushes, remote changes and full
/// reads are applied one at a time against one ``SyncState``.
actor SyncWorker {
	let remote: any Defaults.RemoteKeyValueService
	let prefix: String
	let store: StoreBox
	let stateFile: URL?
	let status: StatusBroadcast
	private var state: SyncState
	private var isConnected = false
	private var isOutageReported = false
	private var lastError: String?
	private var pendingCount = 0
	private var reportedUnreadable: Set<String> = []
	/// Keys changed remotely while they had a local change waiting: their next push must go out (and lose) even if
	/// the local change was undone meanwhile, so that the remote value is applied.
	private var staleNames: Set<String> = []

	private struct Names {
		var synced: Set<String> = []
		/// Names added since the last full read of the prefix.
		var unread: Set<String> = []
	}

	private nonisolated let names = LockedState(Names())

	init(
		remote: any Defaults.RemoteKeyValueService, prefix: String, store: StoreBox, state: SyncState,
		stateFile: URL?, status: StatusBroadcast
	) {
		self.remote = remote
		self.prefix = prefix
		self.store = store
		self.state = state
		self.stateFile = stateFile
		self.status = status
	}

	nonisolated func addNames(_ added: [String]) -> [String] {
		names.withLock { names in
			let new = added.filter { names.synced.insert($0).inserted }
			names.unread.formUnion(new)
			return new
		}
	}

	nonisolated func removeNames(_ removed: [String]) {
		names.withLock { names in
			names.synced.subtract(removed)
			names.unread.subtract(removed)
		}
	}

	nonisolated var currentNames: Set<String> {
		names.withLock { $0.synced }
	}

	// MARK: The background loop

	/// Ends a session when keys were added, so that the next one starts with a full read.
	private struct NewKeysToRead: Error {}

	static let firstRetryDelay: Duration = .milliseconds(50)
	/// How long a session must run before its failure counts as a new outage rather than the same one going on.
	static let stableSession: Duration = .seconds(5)

	/// Refusals (a wrong password, a missing permission) wait longer between tries: each costs the remote a password
	/// check, and they end only when someone changes the set-up.
	static func longestRetryDelay(after error: any Error) -> Duration {
		if case Defaults.RemoteServiceError.refused = error {
			return .seconds(30)
		}
		return .seconds(2)
	}

	func run(wake: WakeSignal, localChanges: LocalChanges) async {
		var delay = Self.firstRetryDelay
		// Resumes the watch from the saved revision when it can; new keys or no revision yet need a full read.
		var needsFullRead = false
		while !Task.isCancelled {
			let started = ContinuousClock.now
			do {
				if needsFullRead || names.withLock({ !$0.unread.isEmpty }) || state.revision == 0 {
					try await readEverything()
					needsFullRead = false
					heardFromRemote()
				}
				// Connected once the remote answers: the watch's first reply, or a push (`heardFromRemote`). Not
				// before, so that a session refused at once backs off and reports its outage once.
				try await session(wake: wake, localChanges: localChanges)
			} catch is CancellationError {
				return
			} catch is NewKeysToRead {
				// Keys added while running: read the prefix for them, then watch again. Not an outage.
				continue
			} catch Defaults.RemoteServiceError.compacted {
				// The history the watch needs is gone: read the whole prefix instead, at once.
				needsFullRead = true
				continue
			} catch {
				if Task.isCancelled {
					return
				}
				// Back to the shortest wait, and a new outage to report, only after a session that held: one refused
				// at once (a push without permission, a wrong password) keeps backing off and is reported once.
				if isConnected, ContinuousClock.now - started >= Self.stableSession {
					delay = Self.firstRetryDelay
					isOutageReported = false
				} else {
					delay = min(delay * 2, Self.longestRetryDelay(after: error))
				}
				didDisconnect(error)
				try? await Task.sleep(for: delay)
			}
		}
	}

	private func session(wake: WakeSignal, localChanges: LocalChanges) async throws {
		let watchFrom = state.revision + 1
		try await withThrowingTaskGroup(of: Void.self) { group in
			group.addTask { [remote, prefix] in
				for try await events in remote.watch(prefix: prefix, fromRevision: watchFrom) {
					await self.receive(events)
				}
				try Task.checkCancellation()
				throw Defaults.RemoteServiceError.unreachable("the watch ended")
			}
			group.addTask {
				while true {
					try await self.pushPending(localChanges: localChanges)
					if self.names.withLock({ !$0.unread.isEmpty }) {
						throw NewKeysToRead()
					}
					await wake.wait()
					try Task.checkCancellation()
				}
			}
			defer { group.cancelAll() }
			try await group.next()
		}
	}

	func synchronize(localChanges: LocalChanges) async -> Bool {
		do {
			try await pushPending(localChanges: localChanges)
			try await readEverything()
			try await pushPending(localChanges: localChanges)
			didConnect()
			isOutageReported = false
			return true
		} catch {
			didDisconnect(error)
			return false
		}
	}

	// MARK: Remote to local

	private func readEverything() async throws {
		// Forgotten only once read and applied: a read that fails leaves them for the next try.
		let reading = names.withLock { $0.unread }
		let snapshot = try await remote.read(prefix: prefix)
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
		// Deleted while this machine was not watching, with the deletion compacted away.
		for (name, record) in state.records where record.value != nil && !seen.contains(name) && synced.contains(name) {
			events.append(.delete(key: prefix + name, modRevision: snapshot.revision))
		}
		apply(events, storedNames: Set(store.store.storedKeys()))
		state.revision = max(state.revision, snapshot.revision)
		state.save(to: stateFile)
		names.withLock { $0.unread.subtract(reading) }
		publish()
	}

	private func receive(_ events: [Defaults.RemoteEvent]) {
		heardFromRemote()
		guard !events.isEmpty else {
			// The watch's first reply: it is running.
			return
		}
		apply(events, storedNames: Set(store.store.storedKeys()))
		for event in events {
			switch event {
			case .put(let entry): state.revision = max(state.revision, entry.modRevision)
			case .delete(_, let revision): state.revision = max(state.revision, revision)
			}
		}
		state.save(to: stateFile)
		publish()
	}

	private func apply(_ events: [Defaults.RemoteEvent], storedNames: Set<String>) {
		let synced = currentNames
		for event in events {
			let (key, value, revision): (String, Data?, Int64) =
				switch event {
				case .put(let entry): (entry.key, entry.value, entry.modRevision)
				case .delete(let key, let revision): (key, nil, revision)
				}
			guard let name = name(ofRemoteKey: key), synced.contains(name) else {
				continue
			}
			let record = state.records[name]
			// Seen already: this machine's own push coming back, or an older event.
			if let record, record.modRevision >= revision {
				continue
			}
			let local = localValue(of: name, storedNames: storedNames)
			// Changed here since the last agreement: its push (a compare-and-swap against the old revision) decides.
			if !Self.isEqual(local, state.agreedLocalValue(forKey: name)) {
				staleNames.insert(name)
				continue
			}
			guard let value else {
				state.records[name] = .init(value: nil, modRevision: revision)
				if local != nil {
					Defaults.SyncEngine.applyRemoteValue(nil, forKey: name, in: store.store)
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
			if !Self.isEqual(local, stored) {
				Defaults.SyncEngine.applyRemoteValue(stored, forKey: name, in: store.store)
			}
		}
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

	// MARK: Local to remote

	private struct Push {
		let name: String
		let generation: Int
		let bytes: Data?
		let expectedModRevision: Int64
	}

	/// How many keys go into one transaction: etcd refuses more than 128 operations in one by default.
	static let pushBatchSize = 100
	/// Well under etcd's default request limit (1.5 MiB) and its gRPC message limit (2 MiB).
	static let pushBatchBytes = 512 << 10

	/// `pushes` in transactions of at most ``pushBatchSize`` keys and ``pushBatchBytes`` bytes of values.
	private static func batches(of pushes: [Push]) -> [ArraySlice<Push>] {
		var batches: [ArraySlice<Push>] = []
		var start = 0
		var bytes = 0
		for (index, push) in pushes.enumerated() {
			let size = push.bytes?.count ?? 0
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

	private func pushPending(localChanges: LocalChanges) async throws {
		let changes = localChanges.pending()
		guard !changes.isEmpty else {
			updatePendingCount(0)
			return
		}
		let synced = currentNames
		let storedNames = Set(store.store.storedKeys())
		var pushes: [Push] = []
		for (name, generation) in changes.sorted(by: { $0.key < $1.key }) {
			guard synced.contains(name) else {
				localChanges.forget(name, upTo: generation)
				continue
			}
			let local = localValue(of: name, storedNames: storedNames)
			if Self.isEqual(local, state.agreedLocalValue(forKey: name)) && !staleNames.contains(name) {
				localChanges.forget(name, upTo: generation)
				continue
			}
			pushes.append(
				Push(
					name: name, generation: generation, bytes: try local.map { try SyncedValueCoding.encode($0) },
					expectedModRevision: state.records[name]?.modRevision ?? 0))
		}
		// Before any request: offline, this is the count a status line shows.
		updatePendingCount(pushes.count)
		for batch in Self.batches(of: pushes) {
			// All at once when none conflicts (the common case: many keys written at once); else one by one, so that
			// each conflict is settled on its own.
			if batch.count > 1, let revision = try await pushAll(batch) {
				for push in batch {
					didWrite(push, at: revision, localChanges: localChanges)
				}
			} else {
				for push in batch {
					try await pushOne(push, localChanges: localChanges)
				}
			}
			state.save(to: stateFile)
		}
		updatePendingCount(localChanges.pendingCount)
	}

	private func didWrite(_ push: Push, at revision: Int64, localChanges: LocalChanges) {
		heardFromRemote()
		state.records[push.name] = .init(value: push.bytes, modRevision: revision)
		staleNames.remove(push.name)
		localChanges.forget(push.name, upTo: push.generation)
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

	private func pushOne(_ push: Push, localChanges: LocalChanges) async throws {
		let result: Defaults.RemoteWriteResult
		do {
			result = try await remote.compareAndSwap(
				key: prefix + push.name, value: push.bytes, expectedModRevision: push.expectedModRevision)
		} catch Defaults.RemoteServiceError.valueTooLarge(let reason) {
			// This value will never fit: say so and let the others through. The local value stays as it is, held
			// against the remote's current record, so that the key syncs again as soon as either side changes it
			// (a later remote change replaces it, like any later change; a later local change is pushed).
			let key = prefix + push.name
			let snapshot = try await remote.read(prefix: key)
			let current = snapshot.entries.first { $0.key == key }
			localChanges.forget(push.name, upTo: push.generation)
			// Unless the watch delivered something newer while this read ran: then the key stays marked stale,
			// and its next push settles it as a conflict.
			if snapshot.revision >= state.revision {
				state.records[push.name] = .init(
					value: current?.value, modRevision: current?.modRevision ?? 0, keptLocalValue: push.bytes,
					isHeldLocally: true)
				staleNames.remove(push.name)
			}
			Defaults.report(
				Defaults.Failure(
					keyName: push.name, reason: .storage,
					message:
						"The value of '\(push.name)' (\(push.bytes?.count ?? 0) bytes stored) was not synced: the remote will not store a value this large (\(reason)). It is kept on this machine until the key changes again, here or on another machine."
				))
			return
		}
		switch result {
		case .written(let revision):
			didWrite(push, at: revision, localChanges: localChanges)
		case .conflict(let current):
			// Made without knowing the latest remote value: the remote value wins here too. Taking the local value
			// as agreed lets `apply` replace it like any remote change.
			localChanges.forget(push.name, upTo: nil)
			staleNames.remove(push.name)
			let storedNames = Set(store.store.storedKeys())
			let local = localValue(of: push.name, storedNames: storedNames)
			state.records[push.name] = .init(
				value: try local.map { try SyncedValueCoding.encode($0) }, modRevision: 0)
			let event: Defaults.RemoteEvent =
				current.map { .put($0) } ?? .delete(key: prefix + push.name, modRevision: max(1, state.revision))
			apply([event], storedNames: storedNames)
		}
	}

	// MARK: Helpers

	private func localValue(of name: String, storedNames: Set<String>) -> Any? {
		storedNames.contains(name) ? store.store.storedValue(forKey: name) : nil
	}

	private func name(ofRemoteKey key: String) -> String? {
		guard key.hasPrefix(prefix) else {
			return nil
		}
		return String(key.dropFirst(prefix.count))
	}

	private static func isEqual(_ lhs: Any?, _ rhs: Any?) -> Bool {
		switch (lhs, rhs) {
		case (nil, nil): true
		case let (lhs?, rhs?): Defaults.PropertyList.isEqual(lhs, rhs)
		default: false
		}
	}

	/// The remote answered: connected, if it was not already.
	private func heardFromRemote() {
		if !isConnected {
			didConnect()
		}
	}

	private func didConnect() {
		isConnected = true
		lastError = nil
		publish()
	}

	private func didDisconnect(_ error: any Error) {
		isConnected = false
		lastError = "\(error)"
		if !isOutageReported {
			isOutageReported = true
			Defaults.report(
				Defaults.Failure(
					keyName: prefix, reason: .storage,
					message:
						"Syncing '\(prefix)' stopped: \(error). Changes are kept locally and pushed when the remote answers again."
				))
		}
		publish()
	}

	private func updatePendingCount(_ count: Int) {
		pendingCount = count
		publish()
	}

	private func publish() {
		status.update(
			Defaults.SyncStatus(
				isConnected: isConnected, pendingCount: pendingCount, lastError: lastError, revision: state.revision))
	}
}
