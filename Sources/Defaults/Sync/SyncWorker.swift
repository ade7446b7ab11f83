import Foundation
import Synchronization

/// The part of a ``Defaults/SyncEngine`` that talks to the remote: one actor, so that pushes, remote changes and full
/// reads are applied one at a time against one ``SyncState``.
actor SyncWorker {
	let remote: any Defaults.RemoteKeyValueService
	let prefix: String
	let store: StoreBox
	let stateFile: URL?
	let status: Broadcast<Defaults.SyncStatus>
	let intents: IntentLog
	let conflicts: Broadcast<Defaults.SyncConflict>
	var state: SyncState
	/// Why the state file was lost, until the first full read has rebuilt the state from the remote.
	var stateLoss: String?
	var isConnected = false
	var isOutageReported = false
	/// Whether this engine's refusal to sync through another prefix's state (``StateOfAnotherPrefix``) was reported,
	/// since it last connected.
	var isPrefixRefusalReported = false
	/// Whether a full read since the engine last connected found the remote to be the one the state knows. Pushes
	/// wait for it: a push compared against another remote's revisions (a wiped cluster) would take the remote's
	/// lack of the key for another machine's change and drop the edit.
	var isRemoteVerified = false
	/// Whether a push of this connection met a key gone from the remote and had the remote read again for it.
	var isMissingKeyChecked = false
	/// Whether a rejoin of a remote that lost its data was reported and has not been completed yet (its put-backs
	/// written): the reads that find the same lost remote again, after a put-back failed, are the same outage, reported
	/// once, whatever revision the failed try moved the state to. Cleared by the next full read that completes.
	var isRejoinReported = false
	/// The keys whose value held on this machine (too large for the remote, or a put-back not known to be written)
	/// the next full read offers again, as the write it was (`readEverything`): those the settings file's state held
	/// when a `synchronize()` began. Offered once: a value the call's own first pass holds is not sent again by it,
	/// unless its key held one already when the call began (then it goes a second time, refused again, unreported).
	var heldToOffer: Set<String> = []
	/// The put-backs the remote refused as too large and that were reported, by key name, a hash of their bytes: a
	/// put-back held is offered again (at each `synchronize()`), and its refusal is reported once per value and engine
	/// (one held since an earlier run may have failed otherwise, unreported), until a write of the key from here lands
	/// (`agreeOnWrite`: a put-back's, an offer's or a push's) or a put-back or offer of it meets another value. A
	/// push's was reported when it was held (`holdLocally`).
	var reportedTooLarge: [String: Int] = [:]
	/// Whether the remote refused to store the prefix's epoch key (see `settleEpoch`).
	var isEpochRefused = false
	var lastError: String?
	var pendingCount = 0
	var reportedUnreadable: Set<String> = []
	/// Whether a failure to read the journal was reported, since the last success.
	var isJournalProblemReported = false
	/// Whether the last write of the state failed (reported once): what was agreed is then in memory only, newer than
	/// the file, which is therefore not read back, and written again at every locked step until it succeeds.
	var isStateUnsaved = false
	/// The ``SyncState/sequencesReserved`` the state file holds, as far as this process knows (read or written by
	/// it): a push or an update sends only sequences at or below it, since a reservation only in memory is lost with
	/// the process, and a next run could give its sequences to new changes (`awaitingDurableReservation`).
	var durableReservation = 0
	/// Whether changes held back for a reservation not on disk were reported, since the reservation last was.
	var isReservationWaitReported = false
	/// Watches ended at once with "compacted", in a row: more than one means the remote keeps saying so, and the
	/// engine waits between tries instead of reading the prefix in a loop.
	var compactedInARow = 0
	/// The push pass under way, if any (``pushPending()``: one at a time).
	var pushPassInFlight: Task<PushPassOutcome, any Error>?
	/// Keys a push pass decided while the watch or a full read had gone past the revision of the decision, read
	/// again at the pass's end; and the local values of those among them whose push lost, reported then.
	var toRefresh: Set<String> = []
	var lostAwaitingWinner: [String: Any?] = [:]
	/// Reports a locked step makes once the values it received are in the store (a lost conflict's winner).
	var lostConflictsToReport: [(name: String, discarded: Any?, winner: Defaults.RemoteEntry?)] = []
	/// The failures a locked step reported, while it runs (`nil` outside one): they reach the failure handler once
	/// the step has released the settings file's lock and the store's disk lock (``locked(_:)``), in the order made.
	/// A handler may use the store (flush it, make an engine of it, as `Defaults.iCloud.configure` does), which takes
	/// the disk lock, and that lock is not reentrant: with it held, the handler's thread would wait for itself.
	var failuresToReport: [Defaults.Failure]?
	/// The watch's events heard and not yet applied, and whether their application is scheduled.
	var receivedEvents: [Defaults.RemoteEvent] = []
	var isApplyScheduled = false
	/// The background loop's wake-up, once it runs.
	var wake: WakeSignal?
	/// The background loop's steps under way, which the engine's `stop()` waits for.
	nonisolated let backgroundSteps = BackgroundSteps()
	/// How many push passes found the settings file's push lock taken and waited for it (a test waits for one).
	nonisolated let pushLockWaits = LockedState(0)
	/// The thread on which this worker calls the app, while it does: its failure handler with a report, or, at the
	/// end of a locked step (its locks released), the store's reports and the observers of the values it applies.
	/// That is on this actor, often in a step, so that the steps go on only once the app's code returns, and a
	/// `stop()` it calls does not wait for them (see ``Defaults/SyncEngine/stop()``).
	nonisolated let threadCallingTheApp = LockedState<ObjectIdentifier?>(nil)

	struct Names {
		var synced: Set<String> = []
		/// Names added since the last full read of the prefix.
		var unread: Set<String> = []
	}

	nonisolated let names = LockedState(Names())

	init(
		remote: any Defaults.RemoteKeyValueService, prefix: String, store: StoreBox, loaded: SyncState.Loaded,
		stateFile: URL?, status: Broadcast<Defaults.SyncStatus>,
		conflicts: Broadcast<Defaults.SyncConflict>, intents: IntentLog
	) {
		self.remote = remote
		self.prefix = prefix
		self.store = store
		self.state = loaded.state ?? SyncState()
		self.durableReservation = loaded.state?.sequencesReserved ?? 0
		if case .lost(let reason) = loaded {
			self.stateLoss = reason
		}
		self.stateFile = stateFile
		self.status = status
		self.intents = intents
		self.conflicts = conflicts
	}

	/// Whether `name` is one of sync's own entries under the prefix (the epoch key, update records), which a synced
	/// key must not be: its pushes would overwrite them.
	nonisolated static func isBookkeeping(_ name: String) -> Bool {
		name.hasPrefix(".defaults-") || name.contains("/.defaults-")
	}

	nonisolated func addNames(_ added: [String]) -> [String] {
		for name in added where Self.isBookkeeping(name) {
			Defaults.report(
				Defaults.Failure(
					keyName: name, reason: .invalidKeyName,
					message:
						"The key '\(name)' is not synced: names that begin with '.defaults-', or hold '/.defaults-', are "
						+ "sync's own entries under the prefix (its epoch key, update records)."))
		}
		return names.withLock { names in
			let new = added.filter { !Self.isBookkeeping($0) && names.synced.insert($0).inserted }
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

	/// The settings file's sync state is another prefix's: this engine does not sync. One settings file syncs one
	/// prefix: its state keeps one revision and one epoch, and its records and journal lines by key name only, so a
	/// second prefix would take the first one's revision and epoch for its remote's (skipping its events, raising a
	/// false alarm), and a rejoin would put one prefix's keys back under the other.
	struct StateOfAnotherPrefix: Error, CustomStringConvertible {
		var stateFile: URL?
		var prefix: String
		var owner: String

		var description: String {
			"the sync state file \(stateFile?.path ?? "") belongs to the prefix '\(owner)', and a settings file syncs one prefix only, so '\(prefix)' is not synced through it: sync '\(prefix)' with another store (another settings file), or sync its keys under '\(owner)'; to move this settings file to '\(prefix)' for good, stop every process that syncs it and remove \(stateFile?.path ?? "its sync state file"): the next engine joins '\(prefix)' as a new machine, pushing the values the remote lacks"
		}
	}

	/// Throws ``StateOfAnotherPrefix`` when `state` is another prefix's.
	func checkPrefix(of state: SyncState) throws {
		if let owner = state.prefix, owner != prefix {
			throw StateOfAnotherPrefix(stateFile: stateFile, prefix: prefix, owner: owner)
		}
	}

	// MARK: The background loop

	/// Ends a session when keys were added, so that the next one starts with a full read.
	private struct NewKeysToRead: Error {}

	static let firstRetryDelay: Duration = .milliseconds(50)
	/// How long a session must run before its failure counts as a new outage rather than the same one going on.
	static let stableSession: Duration = .seconds(5)

	/// Refusals (a wrong password, a missing permission, a state file of another prefix) wait longer between tries:
	/// each costs the remote a password check, and they end only when someone changes the set-up.
	static func longestRetryDelay(after error: any Error) -> Duration {
		if case Defaults.RemoteServiceError.refused = error {
			return .seconds(30)
		}
		if error is StateOfAnotherPrefix {
			return .seconds(30)
		}
		// Short, so that a machine is back within about a second of the remote (or its quorum) coming back.
		return .seconds(1)
	}

	func run(wake: WakeSignal) async {
		self.wake = wake
		var delay = Self.firstRetryDelay
		// Resumes the watch from the saved revision when it can; new keys or no revision yet need a full read.
		var needsFullRead = false
		while !Task.isCancelled {
			let started = ContinuousClock.now
			do {
				// After every reconnection too: a remote that came back may not be the one the state knows.
				if needsFullRead || !isRemoteVerified || names.withLock({ !$0.unread.isEmpty }) || state.revision == 0 {
					// Not once the engine stopped; one under way is waited for by `stop()`.
					guard backgroundSteps.begin() else {
						return
					}
					defer { backgroundSteps.end() }
					// The session's pusher runs a pass first anyway.
					try await readEverything(wakesPusher: false)
					needsFullRead = false
					heardFromRemote()
				}
				// Connected once the remote answers: the watch's first reply, or a push (`heardFromRemote`). Not
				// before, so that a session refused at once backs off and reports its outage once.
				try await session(wake: wake)
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

	/// Waits `delay` before the next try, or less when a local change wakes the loop.
	func waitToRetry(for delay: Duration, wake: WakeSignal) async {
		await withTaskGroup(of: Void.self) { group in
			group.addTask {
				await wake.wait()
			}
			group.addTask {
				try? await Task.sleep(for: delay)
			}
			defer { group.cancelAll() }
			await group.next()
		}
	}

	func session(wake: WakeSignal) async throws {
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
					// Not once the engine stopped; one under way is waited for by `stop()`.
					guard self.backgroundSteps.begin() else {
						throw CancellationError()
					}
					do {
						defer { self.backgroundSteps.end() }
						try await self.pushPending()
					}
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
			try await pushPending()
		} catch {
			didFail(error)
		}
	}

	func synchronize() async -> Bool {
		// Every value held here is offered again, once, by the first full read from here on (this call's, or the one
		// its first pass makes to verify the remote): the remote may take it now (its limit raised, or the value the
		// same size under another limit). The file's state: also one another process of the file held since this
		// process's last locked step.
		heldToOffer.formUnion(stateBeforeRead().records.filter { $0.value.isHeldLocally == true }.keys)
		do {
			var keptLocally = try await pushPending().keptLocally
			keptLocally = try await readEverything() || keptLocally
			var outcome = try await pushPending()
			keptLocally = keptLocally || outcome.keptLocally
			// A push that decided nothing goes out again at once; a few passes settle it unless the key keeps moving.
			var extraPasses = 0
			while outcome.goesOutAgain, !outcome.waits, extraPasses < Self.extraSynchronizePasses {
				extraPasses += 1
				outcome = try await pushPending()
				keptLocally = keptLocally || outcome.keptLocally
			}
			didConnect()
			isOutageReported = false
			// Pushed, but not synchronized while a crash would lose what was agreed. A value held here as too large
			// counts whichever pass found it: the background loop's first read may have put it back (and reported it)
			// before this call, and then none of the passes above meets it again.
			return !keptLocally && !holdsValueTooLarge() && !outcome.waits && !outcome.goesOutAgain
				&& !isStateUnsaved
		} catch {
			didFail(error)
			return false
		}
	}

	/// A pass run for a caller (`synchronize()`, the exit's push) failed. A cancellation (the caller gave up, or the
	/// engine stops) says nothing of the remote; another error met once the caller gave up is not reported (a request
	/// cut short by the cancellation looks like an outage), but not taken for connected either.
	private func didFail(_ error: any Error) {
		guard !(error is CancellationError) else {
			return
		}
		didDisconnect(error, reports: !Task.isCancelled)
	}

	// MARK: Helpers

	/// Whether a synced key's local value is held on this machine only, against the remote's record, because the
	/// remote refused it as too large (a push's, or a put-back's after a lost state or remote): until the remote
	/// takes it (offered again at each `synchronize()`, see ``heldToOffer``) or the key changes again, here or
	/// elsewhere, it is not synced. A put-back not known to be written is held the same way; after a full read that
	/// succeeded, each one it made was sent, and one still held was refused as too large.
	func holdsValueTooLarge() -> Bool {
		let synced = currentNames
		return state.records.contains { name, record in synced.contains(name) && record.isHeldLocally == true }
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

	/// The entries of `snapshot` under the prefix, by key name.
	func entriesByName(in snapshot: Defaults.RemoteSnapshot) -> [String: Defaults.RemoteEntry] {
		Dictionary(
			snapshot.entries.compactMap { entry in name(ofRemoteKey: entry.key).map { ($0, entry) } },
			uniquingKeysWith: { $1 })
	}

	/// The remote answered: connected, if it was not already.
	func heardFromRemote() {
		if !isConnected {
			didConnect()
		}
	}

	func didConnect() {
		isConnected = true
		isPrefixRefusalReported = false
		lastError = nil
		publish()
	}

	/// - Parameter reports: whether an outage not reported yet is reported now (not for a caller that gave up).
	func didDisconnect(_ error: any Error, reports: Bool = true) {
		isConnected = false
		isRemoteVerified = false
		isMissingKeyChecked = false
		lastError = "\(error)"
		if !reports {
			// Left for a later failure to report.
		} else if error is StateOfAnotherPrefix {
			// Under a flag of its own: an outage reported before (the remote was down before this engine read
			// anything, and another prefix's engine took the state meanwhile) promised a push that never comes.
			if !isPrefixRefusalReported {
				isPrefixRefusalReported = true
				reportFailure(
					reason: .unsupported, "Syncing '\(prefix)' stopped: \(error). Changes are kept locally, not pushed."
				)
			}
		} else if !isOutageReported {
			isOutageReported = true
			reportFailure(
				"Syncing '\(prefix)' stopped: \(error). Changes are kept locally and pushed when the remote answers again."
			)
		}
		publish()
	}

	/// Reports a failure of this engine's sync: of the prefix, unless it concerns one key.
	func reportFailure(
		of keyName: String? = nil, reason: Defaults.Failure.Reason = .storage, _ message: String
	) {
		let failure = Defaults.Failure(keyName: keyName ?? prefix, reason: reason, message: message)
		// In a locked step: sent once its locks are released.
		if failuresToReport != nil {
			failuresToReport?.append(failure)
			return
		}
		let previous = markCallingTheApp()
		defer { threadCallingTheApp.withLock { $0 = previous } }
		Defaults.report(failure)
	}

	/// Marks this thread as ``threadCallingTheApp`` and returns the mark it replaced, for the caller to put back.
	func markCallingTheApp() -> ObjectIdentifier? {
		threadCallingTheApp.withLock { thread in
			defer { thread = ObjectIdentifier(Thread.current) }
			return thread
		}
	}

	/// Wakes the loop for a change the engine itself left to push (no local write may come to wake it).
	func wakeToPushAgain() {
		wake?.signal()
	}

	/// Shows `count` keys waiting to be pushed (`nil`: the settings file could not be read, the last count stays).
	func updatePendingCount(_ count: Int?) {
		pendingCount = count ?? pendingCount
		intents.unsettled.store(pendingCount, ordering: .relaxed)
		publish()
	}

	/// Writes the state (under the settings file's lock, see ``locked(_:)``); a failure is reported once until a
	/// write succeeds again, and shows in the status meanwhile.
	func saveState() {
		guard state.save(to: stateFile) else {
			if !isStateUnsaved {
				isStateUnsaved = true
				publish()
				reportFailure(
					"The sync state file \(stateFile?.path ?? "") could not be written: what '\(prefix)' agreed on with the remote is kept in memory and written again at every step; until then the status shows it and synchronize() returns false."
				)
			}
			return
		}
		durableReservation = state.sequencesReserved ?? 0
		if isStateUnsaved {
			isStateUnsaved = false
			publish()
		}
	}

	func publish() {
		let unsaved = isStateUnsaved ? "The sync state file \(stateFile?.path ?? "") could not be written." : nil
		status.send(
			Defaults.SyncStatus(
				isConnected: isConnected, pendingCount: pendingCount, lastError: lastError ?? unsaved,
				revision: state.revision))
	}
}
