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
	let localChanges: LocalChanges
	let conflicts: ConflictBroadcast
	var state: SyncState
	/// The keys with a local change the remote has not taken, as last written to disk.
	var queue: SyncQueue
	/// Why the state file was lost, until the first full read has rebuilt the state from the remote.
	var stateLoss: String?
	var isConnected = false
	var isOutageReported = false
	var lastError: String?
	var pendingCount = 0
	var reportedUnreadable: Set<String> = []
	/// The latest remote change of each key that had a local change waiting when it came, held back until the key's
	/// push settles which wins. A key here is pushed (and loses) even if the local change was undone meanwhile. The
	/// change itself is kept, not only the key's name: the conflict reply of a push may describe an older remote state
	/// than the watch already delivered, and a change the watch delivered is never delivered again.
	var heldBackRemoteChanges: [String: Defaults.RemoteEvent] = [:]
	/// Whether the settings file's failure to reach the disk was reported, since it last reached it.
	var isUndurableReported = false
	/// Watches ended at once with "compacted", in a row: more than one means the remote keeps saying so, and the
	/// engine waits between tries instead of reading the prefix in a loop.
	var compactedInARow = 0
	/// The push pass under way, if any (``pushPending(localChanges:)``: one at a time).
	var pushPassInFlight: Task<PushPassOutcome, any Error>?
	/// What the queue file holds; `nil` before the first write.
	var queueOnDisk: SyncQueue?
	/// The background loop's wake-up, once it runs.
	var wake: WakeSignal?
	/// Whether the state holds remote changes not yet written (``scheduleStateSave()``).
	nonisolated let isStateSavePending = Atomic<Bool>(false)

	struct Names {
		var synced: Set<String> = []
		/// Names added since the last full read of the prefix.
		var unread: Set<String> = []
	}

	nonisolated let names = LockedState(Names())

	init(
		remote: any Defaults.RemoteKeyValueService, prefix: String, store: StoreBox, loaded: SyncState.Loaded,
		queue: SyncQueue, stateFile: URL?, status: StatusBroadcast, conflicts: ConflictBroadcast,
		localChanges: LocalChanges
	) {
		self.remote = remote
		self.prefix = prefix
		self.store = store
		switch loaded {
		case .none:
			self.state = SyncState()
		case .state(let state):
			self.state = state
		case .lost(let reason):
			self.state = SyncState()
			self.stateLoss = reason
		}
		self.queue = queue
		self.stateFile = stateFile
		self.status = status
		self.localChanges = localChanges
		self.conflicts = conflicts
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
		// Short, so that a machine is back within about a second of the remote (or its quorum) coming back.
		return .seconds(1)
	}

	func run(wake: WakeSignal, localChanges: LocalChanges) async {
		self.wake = wake
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
			} catch Defaults.RemoteServiceError.compacted(let revision) {
				// The history the watch needs is gone: read the whole prefix instead, at once the first time. A remote
				// that says so again right after a full read is waited for, with back-off, and reported once.
				needsFullRead = true
				// A watch that ran a while before its history was compacted is a first time again.
				compactedInARow = ContinuousClock.now - started >= Self.stableSession ? 1 : compactedInARow + 1
				if compactedInARow > 1 {
					delay = min(
						delay * 2, Self.longestRetryDelay(after: Defaults.RemoteServiceError.compacted(revision)))
					didDisconnect(Defaults.RemoteServiceError.compacted(revision))
					try? await Task.sleep(for: delay)
				}
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
				await waitToRetry(for: delay, wake: wake)
			}
		}
	}

	/// Waits `delay` before the next try, writing the queue at every local change meanwhile: no push pass runs while
	/// the remote is unreachable, and a change made offline must be on disk as one this machine made on purpose before
	/// a signal can end the program (else a removal comes back at the next start as a lost file's key).
	func waitToRetry(for delay: Duration, wake: WakeSignal) async {
		// Also before waiting: a change whose wake-up the failed session took (its push loop, cancelled with it)
		// would otherwise reach the queue only at the next one.
		recordQueuedChanges(localChanges.pendingChanges())
		saveQueue()
		let deadline = ContinuousClock.now + delay
		while !Task.isCancelled, ContinuousClock.now < deadline {
			let woken = await withTaskGroup(of: Bool.self) { group in
				group.addTask {
					await wake.wait()
					return true
				}
				group.addTask {
					try? await Task.sleep(until: deadline)
					return false
				}
				defer { group.cancelAll() }
				return await group.next() ?? false
			}
			guard woken else {
				return
			}
			recordQueuedChanges(localChanges.pendingChanges())
			saveQueue()
		}
	}

	/// Adds to the queue the synced keys with a change written or removed through the package in this process: a
	/// wish, whatever the remote says later. Changes heard by name (another process's, a key newly synced) are left
	/// to the push pass, which tells a lost settings file from a removal and a new key from an edit.
	func recordQueuedChanges(_ changes: [String: (generation: Int, isWrittenHere: Bool)]) {
		let synced = currentNames
		for (name, change) in changes where change.isWrittenHere && synced.contains(name) {
			queue.names.insert(name)
		}
	}

	func session(wake: WakeSignal, localChanges: LocalChanges) async throws {
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

	/// One push of what is pending, as at exit; a failure leaves the changes queued.
	func pushOnce() async {
		do {
			try await pushPending(localChanges: localChanges)
		} catch {
			didDisconnect(error)
		}
		saveStateIfPending()
	}

	func synchronize(localChanges: LocalChanges) async -> Bool {
		do {
			var keptLocally = try await pushPending(localChanges: localChanges).keptLocally
			try await readEverything()
			var outcome = try await pushPending(localChanges: localChanges)
			keptLocally = keptLocally || outcome.keptLocally
			// A push that decided nothing goes out again at once; a few passes settle it unless the key keeps moving.
			var extraPasses = 0
			while outcome.goesOutAgain, !outcome.waits, extraPasses < Self.extraSynchronizePasses {
				extraPasses += 1
				outcome = try await pushPending(localChanges: localChanges)
				keptLocally = keptLocally || outcome.keptLocally
			}
			didConnect()
			isOutageReported = false
			return !keptLocally && !outcome.waits && !outcome.goesOutAgain
		} catch {
			didDisconnect(error)
			return false
		}
	}

	// MARK: Helpers

	func localValue(of name: String, storedNames: Set<String>) -> Any? {
		// The store's own value: a launch argument that shadows it is this run's, never pushed.
		storedNames.contains(name) ? store.store.ownValue(forKey: name) : nil
	}

	/// Whether `local`, the local value of `name`, is the value this machine last agreed on with the remote: not a
	/// local change to push.
	func isAgreed(_ local: Any?, forKey name: String) -> Bool {
		Defaults.PropertyList.isEqualOrBothAbsent(local, state.agreedLocalValue(forKey: name))
	}

	func name(ofRemoteKey key: String) -> String? {
		guard key.hasPrefix(prefix) else {
			return nil
		}
		return String(key.dropFirst(prefix.count))
	}

	/// The remote answered: connected, if it was not already.
	func heardFromRemote() {
		if !isConnected {
			didConnect()
		}
	}

	func didConnect() {
		isConnected = true
		lastError = nil
		publish()
	}

	func didDisconnect(_ error: any Error) {
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

	/// Counts a change of `name` the engine itself found (the local value must go out again) and wakes the loop: no
	/// local write may come to wake it.
	func noteLocalChange(_ name: String) {
		localChanges.note(name)
		wake?.signal()
	}

	func updatePendingCount(_ count: Int) {
		pendingCount = count
		publish()
	}

	/// Saves the state once the local values it agrees on are on disk; when they cannot be written, the state on
	/// disk stays as it was, and the next save tries again.
	func saveState() {
		guard Defaults.SyncEngine.makeLocalValuesDurable(in: store.store) else {
			return
		}
		isStateSavePending.store(false, ordering: .relaxed)
		state.save(to: stateFile)
		saveQueue()
	}

	/// Writes the queue when it changed (and once at first, so that a state file lost later is noticed as lost).
	func saveQueue() {
		guard stateFile != nil, queue != queueOnDisk else {
			return
		}
		if writeSharedQueue() {
			queueOnDisk = queue
		}
	}

	func publish() {
		status.update(
			Defaults.SyncStatus(
				isConnected: isConnected, pendingCount: pendingCount, lastError: lastError, revision: state.revision))
	}
}
