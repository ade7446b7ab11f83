import Foundation
import Synchronization

/// The changes made on purpose to an engine's keys (the journal of intent), and a few counts the engine reads
/// without its actor.
///
/// For a store kept in a settings file, the journal is the file beside it (`ChangeJournal`), which every process's
/// flush appends to under the file's lock; here are only the names heard written since the last push pass. For
/// other stores (one process each), the lines live here, appended by the commit taps.
final class IntentLog: Sendable {
	/// Whether the journal is this object's (a store without a settings file).
	let isInMemory: Bool
	private let lines = LockedState<[ChangeJournal.Line]>([])
	/// Writes heard through the commit taps since the last push pass began, and pending names after it: what the
	/// exit push and `hasPendingChanges` look at.
	let unsettled = Atomic<Int>(0)

	/// - Parameter settled: the highest sequence the state says is settled: the in-memory journal's lines start
	///   after it, so that a state kept in a file from an earlier run never takes a new line for a settled one.
	init(isInMemory: Bool, settled: Int = 0) {
		self.isInMemory = isInMemory
		lines.withLock { $0 = settled > 0 ? [ChangeJournal.Line(s: settled, k: nil, p: nil)] : [] }
	}

	/// Set while the engine applies received values, so that the commit taps do not record them.
	@TaskLocal static var isApplyingReceived = false

	/// A write of `name` through the package in this process.
	func noteWrite(_ name: String) {
		unsettled.add(1, ordering: .relaxed)
		guard isInMemory, !Self.isApplyingReceived else {
			return
		}
		lines.withLock { lines in
			lines.append(ChangeJournal.Line(s: (lines.last?.s ?? 0) + 1, k: name, p: nil))
		}
	}

	/// Records `names` as changed on purpose (a key newly synced whose local value goes out, a first form's queue);
	/// a `nil` only takes a sequence (an atomic update's mark), and the `reserving` before it.
	func record(_ names: [String?], reserving: Int = 0) -> [ChangeJournal.Line] {
		lines.withLock { lines in
			let first = lines.count
			var skipped = reserving
			for name in names {
				lines.append(ChangeJournal.Line(s: (lines.last?.s ?? 0) + 1 + skipped, k: name, p: nil))
				skipped = 0
			}
			return Array(lines[first...])
		}
	}

	var memoryLines: [ChangeJournal.Line] {
		lines.withLock { $0 }
	}

	/// Drops the lines `isSettled` says are decided, keeping the last sequence: a pending line older than the
	/// dropped ones gets a line with no name after it, else the next write would take a sequence already settled.
	func compact(_ isSettled: (ChangeJournal.Line) -> Bool) {
		lines.withLock { lines in
			guard let last = lines.last else {
				return
			}
			lines.removeAll(where: isSettled)
			if (lines.last?.s ?? 0) < last.s {
				lines.append(ChangeJournal.Line(s: last.s, k: nil, p: nil))
			}
		}
	}
}

// Every step that reads or changes the state, the journal and the synced local values takes the settings file's
// lock and reads the state afresh, so that the processes of one settings file act as one machine.
extension SyncWorker {
	/// What a locked step sees of the local side.
	struct LocalSide {
		var lines: [ChangeJournal.Line]
		/// The settings file's values; `nil` for a store without one (its values are asked from it).
		let fileValues: [String: Any]?
		let store: StoreBox
		/// Where ``record(_:)`` appends: the journal beside the settings file, else the in-memory one.
		let journal: ChangeJournal?
		let intents: IntentLog
		/// Values received from the remote to apply (a `nil` inside: remove the key).
		var received: [String: Any?] = [:]

		/// Records `names` in the journal as changed here (a newly synced key whose local value goes out); a `nil`
		/// only takes a sequence, and the `reserving` before it. Returns the lines appended (none when the journal
		/// could not be written).
		@discardableResult
		mutating func record(_ names: [String?], reserving: Int = 0) -> [ChangeJournal.Line] {
			// No names append nothing, to either journal.
			let appended =
				journal.map { (try? $0.append(names, reserving: reserving).get()) ?? [] }
				?? intents.record(names, reserving: reserving)
			lines += appended
			return appended
		}

		/// The store's own value of `name` (a launch argument that shadows it is this run's, never pushed), with
		/// what this step received.
		func value(of name: String) -> Any? {
			if let received = received[name] {
				return received
			}
			if let fileValues {
				return fileValues[name]
			}
			return store.store.storedKeys().contains(name) ? store.store.ownValue(forKey: name) : nil
		}
	}

	/// Runs `body` under the settings file's lock with the state as every process of the file left it, writes the
	/// state when `body` changed it, then the values it received into the store.
	///
	/// The app's code runs once the locks are released (the settings file's, and the store's disk lock, which is not
	/// reentrant), so that it may use the store: the store's reports and the observers of the values received (Storage
	/// calls them after its lock), then the failures the step reported (held meanwhile, ``failuresToReport``), then
	/// its lost conflicts (once their winners are in the store).
	///
	/// - Returns: `nil` when the settings file could not be locked or written (Storage reported it), or its journal
	///   not read (reported); nothing of `body` is kept then.
	@discardableResult
	func locked<T>(_ body: (inout LocalSide) -> T) -> T? {
		let saved = state
		// What a conflict settled in the step adds besides the state (`settleConflict`): not kept either when the step
		// is not, or a push that decided nothing would be reported as lost.
		let savedConflicts = (lostConflictsToReport, lostAwaitingWinner, toRefresh)
		// The store's reports and the observers of the values received run on this thread.
		let previousMark = markCallingTheApp()
		defer { threadCallingTheApp.withLock { $0 = previousMark } }
		// No step runs inside another (the disk lock is not reentrant): this one's failures are its own.
		failuresToReport = []
		// One step, with the file's values and its journal, or (no settings file) the store's and the in-memory one.
		func step(fileValues: [String: Any]?, journal: ChangeJournal?) -> (received: [String: Any?], result: T?) {
			let before = state
			// Another prefix's state is left alone (see `StateOfAnotherPrefix`); an older one, of no prefix, is
			// taken for this engine's.
			guard (try? checkPrefix(of: state)) != nil else {
				return ([:], nil)
			}
			state.prefix = prefix
			// Not on a journal that cannot be read (`readJournal` gives nil): it may hold pending lines, and a step
			// without them would take their keys for unchanged and put their agreed values back over the changes.
			let read: (lines: [ChangeJournal.Line], byteCount: Int?)?
			if let journal {
				read = readJournal(journal)
			} else {
				read = (intents.memoryLines, nil)
			}
			guard let read else {
				return ([:], nil)
			}
			var local = LocalSide(
				lines: read.lines, fileValues: fileValues, store: store, journal: journal, intents: intents)
			migrateIfNeeded(&local)
			let result = body(&local)
			// A lost state knows nothing until a full read rebuilds it (that step clears `stateLoss`): compacting
			// with it would drop every other process's lines, and saving it would replace the state they hold.
			guard stateLoss == nil else {
				return (local.received, result)
			}
			if let journal {
				// The size the read saw is the journal's still unless the step appended to it.
				compactJournal(journal, lines: local.lines, byteCount: local.lines == read.lines ? read.byteCount : nil)
			} else if local.lines.count >= Self.journalCompactionLines {
				intents.compact { line in line.k.map { state.settledSequence(of: $0) >= line.s } ?? true }
			}
			if state != before || isStateUnsaved {
				saveState()
			}
			return (local.received, result)
		}
		let locked = Defaults.SyncEngine.withSettingsFileLocked(of: store.store) { values in
			reloadState()
			return step(fileValues: values, journal: Defaults.SyncEngine.journal(of: store.store))
		}
		defer { sendReportsAfterApplying() }
		switch locked {
		case .done(let result?):
			return result
		case .done(nil), .failed:
			state = saved
			(lostConflictsToReport, lostAwaitingWinner, toRefresh) = savedConflicts
			return nil
		case .noFile:
			let (received, result) = step(fileValues: nil, journal: nil)
			IntentLog.$isApplyingReceived.withValue(true) {
				for (name, value) in received.sorted(by: { $0.key < $1.key }) {
					Defaults.SyncEngine.applyRemoteValue(value, forKey: name, in: store.store)
				}
			}
			return result
		}
	}

	private func sendReportsAfterApplying() {
		let failures = failuresToReport ?? []
		failuresToReport = nil
		// On the thread `locked` marked as calling the app.
		failures.forEach(Defaults.report)
		let reports = lostConflictsToReport
		lostConflictsToReport = []
		for report in reports {
			reportLostConflict(name: report.name, discarded: report.discarded, winner: report.winner)
		}
	}

	/// The journal's lines, the last of each name (all that pending changes need, however long the journal grew),
	/// and its size as the read saw it (`nil` when not known); a
	/// missing journal is made, so that every flush from now on records, with the line that carries the sequences
	/// the state settled or reserved on, which this step reads too: a push of this file in doubt (its reply lost) has
	/// one of them, and its echo met here is this machine's own, not another's that copied the state (`ownMark`).
	/// `nil` when it cannot be read.
	private func readJournal(_ journal: ChangeJournal) -> (lines: [ChangeJournal.Line], byteCount: Int?)? {
		let (contents, byteCount) = journal.readCounting(latestOnly: true)
		switch contents {
		case .lines(let lines):
			isJournalProblemReported = false
			return (lines, byteCount)
		case .missing:
			let floor = state.sequenceFloor
			_ = journal.replace(with: floor)
			return (floor, nil)
		case .refused(let reason):
			if !isJournalProblemReported {
				isJournalProblemReported = true
				reportFailure(
					"The sync journal \(journal.file.path) could not be read (\(reason)): changes of '\(prefix)' are neither pushed nor received until it can."
				)
			}
			return nil
		}
	}

	/// Takes the state the file holds: another process of this settings file may have moved it on. Not while this
	/// process could not write it: the file is older than the memory then.
	private func reloadState() {
		guard !isStateUnsaved, case .state(let onDisk) = SyncState.load(from: stateFile) else {
			return
		}
		state = onDisk
		durableReservation = onDisk.sequencesReserved ?? 0
	}

	/// A state of the first form: its queue's names become journal lines, pushed as this machine's changes, and the
	/// queue file is removed once they are there.
	private func migrateIfNeeded(_ local: inout LocalSide) {
		guard state.format != SyncState.currentFormat else {
			return
		}
		let queued = state.migrate(besideStateFile: stateFile)
		local.record(queued.filter { state.pending(in: local.lines, among: [$0]).isEmpty })
		if let stateFile {
			try? FileManager.default.removeItem(at: SyncState.queueFile(besideStateFile: stateFile))
		}
	}

	/// Drops the journal's lines once every line of this engine's keys is decided, keeping its last sequence: a state
	/// file lost later then finds only the changes it had not pushed (with a line settled long ago, a lost state
	/// would push an old value as an edit). The highest line not decided of a key the state holds a record of stays
	/// (all a push needs of it): another process of the settings file may sync keys this one does not, and pushes
	/// them from here. Every key a process of the file synced has a record from its first full read on
	/// (`noteSyncedKeysTheRemoteLacks`), also one the remote lacks.
	///
	/// - Parameter byteCount: the journal's size, when known from this step's read (else it is opened for it).
	private func compactJournal(_ journal: ChangeJournal, lines: [ChangeJournal.Line], byteCount: Int?) {
		guard let last = lines.last, state.pending(in: lines, among: currentNames).isEmpty else {
			return
		}
		let others = state.pending(in: lines, among: Set(state.records.keys).subtracting(currentNames))
		var kept = lines.filter { line in line.k.map { others[$0] == line.s } ?? false }
		if kept.last?.s != last.s {
			kept.append(ChangeJournal.Line(s: last.s, k: nil, p: nil))
		}
		// `lines` are the latest of each name only: a journal that is just them may still hold older lines (of keys
		// no process here syncs, or nameless ones), which only its size tells.
		guard
			kept != lines
				|| (byteCount.map { ChangeJournal.holdsMore(than: kept, byteCount: $0) }
					?? journal.holdsMore(than: kept))
		else {
			return
		}
		_ = journal.replace(with: kept)
	}

	/// How many lines the in-memory journal holds before the settled ones are dropped.
	static let journalCompactionLines = 64

	/// Whether `name` has a change recorded and not pushed.
	func isPending(_ name: String, in local: LocalSide) -> Bool {
		!state.pending(in: local.lines, among: [name]).isEmpty
	}

	// MARK: One pusher at a time

	/// Takes the push lock of the settings file (`.<name>.plist.sync.push.lock`), waiting for another process's
	/// push pass to end (at most ``pushLockWait``): two passes of one file pushing one change would each take the
	/// other's commit for another machine's. `nil` for a store without a file, or when the lock cannot be used.
	///
	/// - Throws: `CancellationError` when the pass is cancelled before it has the lock (the engine stops, its
	///   session ends, or the task of a `synchronize()` or an update that runs it is cancelled): the pass ends without
	///   pushing rather than push alongside the pass that holds it (which may be one whose failure handler called
	///   the `stop()`).
	func takePushLock() async throws -> Int32? {
		let deadline = ContinuousClock.now + Self.pushLockWait
		var isCounted = false
		while true {
			switch Defaults.SyncEngine.tryPushLock(of: store.store) {
			case .locked(let descriptor):
				// A cancelled pass does not begin, also when the lock came free in the moment between the
				// cancellation and the check below (the sleep ends at once when cancelled).
				if Task.isCancelled {
					Defaults.SyncEngine.releasePushLock(descriptor)
					throw CancellationError()
				}
				return descriptor
			case .unavailable:
				return nil
			case .busy:
				try Task.checkCancellation()
				guard ContinuousClock.now < deadline else {
					return nil
				}
				if !isCounted {
					isCounted = true
					pushLockWaits.withLock { $0 += 1 }
				}
				try? await Task.sleep(for: .milliseconds(5))
			}
		}
	}

	/// Longer than a push pass takes when the remote answers.
	static let pushLockWait = Duration.seconds(10)
}
