import Foundation
import Synchronization

/// The bookkeeping of one atomic update's compare-and-swap loop: what each try wrote, which answers were lost, when
/// to give up, and how a lost answer's commit is told from another machine's.
///
/// Every try writes its values in the second wire form with a mark of its own, as pushes do: the machine id and a
/// sequence taken from the journal for that try (`SyncWorker.marksForUpdate(of:)`, a few at once). The mark in the
/// value makes an echo known as this machine's, but cannot tell whether a try whose answer was lost committed: another
/// machine may have overwritten the value since. So the same transaction also writes this machine's *update record*
/// of the first key it writes (``Record``, at `<key>/.defaults-update/<machine id in hex>`, read with the key), which
/// lists the highest sequences of this machine's committed updates of that key, and compares the record's revision as
/// it compares the keys'. The next read of the keys tells for certain: a try committed if and only if the record
/// lists its sequence. A try not listed has not committed yet, and if it still does, it breaks the compares of every
/// later try (each try compares every key, and each commit changes a key), so the next read finds it listed. That holds
/// whatever the answer said: etcd's client sends a transaction again to the next member when the first one's answer is
/// lost, and the second send finds the compares broken by the first's commit and answers "conflict".
struct AtomicUpdateLoop {
	/// A key's new remote bytes (a removal's are a marked tombstone), as agreed once committed.
	struct Write: Sendable {
		let key: String
		let bytes: Data
	}

	/// One try: the transaction it sent and what it meant.
	struct Attempt {
		let mark: SyncedValueCoding.Mark
		/// Which run of the update's closure it is (0 for the first), so that the caller returns that run's result.
		let run: Int
		/// The keys it changes; a key the closure left as the remote had it is only compared, keeps its revision and
		/// is not here.
		let writes: [Write]
		let values: [String: Any]
		let remoteWrites: [Defaults.RemoteWrite]
		/// Where this machine's record of the first key it writes is (`nil`: it writes nothing).
		let recordKey: String?
	}

	/// This machine's record of its committed updates of one key: the highest sequences, and the highest one that
	/// no longer fits. A try committed if and only if its sequence is listed; one at or below `dropped` and not
	/// listed cannot be told, and the update says its outcome is unknown. The bytes are JSON, pinned in
	/// `Fixtures/Sync/WireForms.plist`; an engine that does not know them (version 1 and 2 engines of the values)
	/// takes the key for one no engine syncs, as it is no synced key's name.
	struct Record: Equatable {
		var committed: [Int] = []
		var dropped = 0

		/// How many sequences a record keeps: a try is looked up at the update's next read, long before as many
		/// later updates of the key by this machine have committed.
		static let capacity = 32
		static let infix = "/.defaults-update/"

		/// The key of `machine`'s record of `key`.
		static func key(of key: String, machine: Data) -> String {
			key + infix + machine.map { String(format: "%02x", $0) }.joined()
		}

		init(committed: [Int] = [], dropped: Int = 0) {
			self.committed = committed
			self.dropped = dropped
		}

		/// The record `bytes` hold; an empty record when there are none; `nil` for bytes this version cannot read.
		init?(_ bytes: Data?) {
			guard let bytes else {
				self.init()
				return
			}
			guard let root = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any], root["v"] as? Int == 1,
				let committed = root["committed"] as? [Int], let dropped = root["dropped"] as? Int
			else {
				return nil
			}
			self.init(committed: committed, dropped: dropped)
		}

		var bytes: Data {
			let root: [String: Any] = ["v": 1, "committed": committed, "dropped": dropped]
			return (try? JSONSerialization.data(withJSONObject: root, options: [.sortedKeys])) ?? Data()
		}

		/// The record with `sequence` added, the lowest dropped past ``capacity``.
		func adding(_ sequence: Int) -> Record {
			var sorted = (committed + [sequence]).sorted()
			var dropped = self.dropped
			while sorted.count > Self.capacity {
				dropped = max(dropped, sorted.removeFirst())
			}
			return Record(committed: sorted, dropped: dropped)
		}
	}

	/// What the keys hold remotely at a try's read.
	struct Current {
		var values: [String: Any] = [:]
		/// The keys' entries, by name: their revisions to compare against, their bytes to tell a key the closure left
		/// as it was.
		var found: [String: Defaults.RemoteEntry] = [:]
		/// Every entry the reads found, this machine's update records among them.
		var entries: [Defaults.RemoteEntry] = []
	}

	/// etcd refuses transactions of more than 128 operations by default: as many keys as a push's transaction.
	static let keyLimit = SyncWorker.pushBatchSize

	let names: [String]
	let keys: [String]
	/// The tries sent that wrote something and got no answer that they committed: any may have, see ``Record``.
	private var sent: [Attempt] = []
	/// How many times the update's closure has run.
	private var runs = 0
	private var conflicts = 0
	private var failures = 0
	/// Set at the first try whose answer was lost: until then, a failure means nothing was committed.
	private var resolveDeadline: ContinuousClock.Instant?

	init(names: [String], prefix: String) {
		self.names = names
		self.keys = names.map { prefix + $0 }
	}

	/// `names` for a sentence: `'a', 'b'`.
	static func quoted(_ names: [String]) -> String {
		names.map { "'\($0)'" }.joined(separator: ", ")
	}

	/// The try that the remote committed after all, if this machine's record in `snapshots` lists it, with what its
	/// keys hold now (another machine's or another update's later change, or still the try's).
	///
	/// - Throws: ``Defaults/SyncedUpdateError/Reason/outcomeUnknown`` when a try's record cannot tell (unreadable,
	///   or the sequence dropped from it).
	func committedAttempt(
		in snapshots: [Defaults.RemoteSnapshot]
	) throws -> (attempt: Attempt, current: [Defaults.RemoteEntry])? {
		let entries = snapshots.flatMap(\.entries)
		for attempt in sent {
			guard let recordKey = attempt.recordKey else {
				continue
			}
			let entry = entries.first { $0.key == recordKey }
			guard let record = Record(entry?.value) else {
				throw unknownOutcome("this machine's update record \(recordKey) is not one this version reads")
			}
			if record.committed.contains(attempt.mark.sequence) {
				// The record's revision may be a later update's: the keys' own are taken, with what they hold.
				return (attempt, attempt.writes.compactMap { write in entries.first { $0.key == write.key } })
			}
			if attempt.mark.sequence <= record.dropped {
				throw unknownOutcome("this machine's update record \(recordKey) no longer lists so early a try")
			}
		}
		return nil
	}

	/// Counts a run of the closure, made just before it runs.
	mutating func willRunClosure() {
		runs += 1
	}

	/// Whether a try's answer was lost and its outcome is still unknown: from then on, any failure of the update
	/// (a throw of the closure, a cancellation) must say that the update may have been committed.
	var mayHaveCommitted: Bool {
		resolveDeadline != nil
	}

	/// The error for an update that ends, for `cause`, while a try whose answer was lost may have been committed.
	func unknownOutcome(after cause: any Error) -> Defaults.SyncedUpdateError {
		// The update's own error says that nothing was changed, which is what this one cannot say: quoted without it.
		var text = (cause as? Defaults.SyncedUpdateError)?.message ?? "\(cause)"
		for clause in ["; nothing was changed", ". Nothing was changed"] {
			if let range = text.range(of: clause) {
				text = String(text[..<range.lowerBound])
			}
		}
		return unknownOutcome("the update ended before it could tell: \(text)")
	}

	/// The keys' remote values and revisions in `snapshots` (one per key, in order).
	func currentValues(in snapshots: [Defaults.RemoteSnapshot]) throws -> Current {
		var current = Current(entries: snapshots.flatMap(\.entries))
		for (index, name) in names.enumerated() {
			guard let entry = snapshots[index].entries.first(where: { $0.key == keys[index] }) else {
				continue
			}
			current.found[name] = entry
			// A removal's tombstone: no value, but a revision to compare against.
			if SyncedValueCoding.isRemoval(entry.value) {
				continue
			}
			guard let stored = SyncedValueCoding.decode(entry.value) else {
				throw failure(
					.unreadableRemoteValue,
					"The remote value of '\(name)' (\(entry.key), revision \(entry.modRevision)) is not a synced stored form, so the update could not read it; nothing was changed."
				)
			}
			current.values[name] = stored
		}
		return current
	}

	/// The transaction that writes `updated` if every key still has the revision it had in `current`.
	mutating func attempt(
		writing updated: [String: Any], over current: Current, mark: SyncedValueCoding.Mark
	) throws -> Attempt {
		guard names.count <= Self.keyLimit else {
			throw failure(.refused, "An update of more than \(Self.keyLimit) keys was refused; nothing was changed.")
		}
		if let extra = updated.keys.first(where: { !names.contains($0) }) {
			throw failure(
				.refused, "The update returned a value for '\(extra)', a key it was not given; nothing was changed.")
		}
		var writes: [Write] = []
		var remoteWrites: [Defaults.RemoteWrite] = []
		for (index, name) in names.enumerated() {
			// etcd compares a key that does not exist as revision 0 (a removed one has its tombstone's revision).
			let expected = current.found[name]?.modRevision ?? 0
			// Left as it was (read only, or set to the same value; also a key that does not exist and stays so):
			// compared, so that the update still rests on it, but not written, so that it keeps its revision and
			// another machine's change of it made meanwhile is not turned into a lost conflict by a write of the same
			// bytes.
			if SyncWorker.isSameValue(updated[name], asRemote: current.found[name]?.value) {
				remoteWrites.append(
					.comparison(key: keys[index], value: current.found[name]?.value, expectedModRevision: expected))
				continue
			}
			// A removal of a key the remote holds leaves a tombstone.
			let bytes: Data
			do {
				bytes = try SyncedValueCoding.pushedBytes(of: updated[name], mark: mark)
			} catch {
				throw failure(
					.refused, "The new value of '\(name)' is not a property list (\(error)); nothing was changed.")
			}
			writes.append(Write(key: keys[index], bytes: bytes))
			remoteWrites.append(Defaults.RemoteWrite(key: keys[index], value: bytes, expectedModRevision: expected))
		}
		var recordKey: String?
		if let first = writes.first {
			let key = Record.key(of: first.key, machine: mark.machine)
			let entry = current.entries.first { $0.key == key }
			guard let record = Record(entry?.value) else {
				throw failure(
					.unreadableRemoteValue,
					"This machine's update record \(key) is not one this version reads, so the update could not record its commit; nothing was changed."
				)
			}
			remoteWrites.append(
				Defaults.RemoteWrite(
					key: key, value: record.adding(mark.sequence).bytes, expectedModRevision: entry?.modRevision ?? 0))
			recordKey = key
		}
		let attempt = Attempt(
			mark: mark, run: runs - 1, writes: writes, values: updated, remoteWrites: remoteWrites, recordKey: recordKey
		)
		if recordKey != nil {
			sent.append(attempt)
		}
		return attempt
	}

	/// A read failed: before any commit went out nothing changed, and the update fails at once; after one whose
	/// answer was lost, it asks again until ``Defaults/SyncEngine/atomicUpdateResolveTime`` has passed.
	mutating func readFailed(_ error: Defaults.RemoteServiceError) throws {
		guard resolveDeadline != nil else {
			throw failure(
				error.isRefusal ? .refused : .unreachable,
				"The remote could not be asked for the latest value of \(Self.quoted(names)) (\(error)), so the update was not made: an atomic update of a synced key needs the remote. Nothing was changed, locally or remotely."
			)
		}
		try checkResolveDeadline(error)
	}

	/// A commit got no answer (or one that says nothing of its outcome): the next read tells, by the record.
	mutating func commitFailed(_ error: Defaults.RemoteServiceError, _ attempt: Attempt) throws {
		if error.isRefusal {
			// Refused before it ran: this try changed nothing.
			if resolveDeadline == nil {
				throw failure(
					.refused, "The remote refused the update of \(Self.quoted(names)) (\(error)); nothing was changed.")
			}
		} else if !attempt.writes.isEmpty {
			// A try that writes nothing changes nothing, committed or not.
			resolveDeadline = resolveDeadline ?? .now + Defaults.SyncEngine.atomicUpdateResolveTime
		}
		try checkResolveDeadline(error)
	}

	/// Another machine changed a key since the read (or this try committed, answered by a second member the client
	/// sent it to): the next read tells, and the update tries again, a bounded number of times.
	mutating func conflicted() {
		conflicts += 1
	}

	/// Fails the update once it has conflicted as many times as it tries, checked after a read found that no try
	/// committed.
	func checkConflicts() throws {
		guard conflicts < Defaults.SyncEngine.atomicUpdateTries else {
			if resolveDeadline != nil {
				throw unknownOutcome("it kept conflicting with other machines' changes")
			}
			throw failure(
				.tooManyConflicts,
				"Other machines changed \(Self.quoted(names)) before each of \(conflicts) tries of the update could commit; nothing was changed."
			)
		}
	}

	/// A short, random wait: machines that conflicted do not try again in step.
	nonisolated(nonsending) mutating func backOff() async throws {
		let limit: Int
		if resolveDeadline != nil {
			failures += 1
			limit = min(50 << min(failures, 4), 500)
		} else {
			limit = min(1 << min(conflicts, 6), 50)
		}
		try await Task.sleep(for: .microseconds(Int.random(in: 0...(limit * 1000))))
	}

	private mutating func checkResolveDeadline(_ error: Defaults.RemoteServiceError) throws {
		if let resolveDeadline, ContinuousClock.now >= resolveDeadline {
			throw unknownOutcome("\(error)")
		}
	}

	private func unknownOutcome(_ cause: String) -> Defaults.SyncedUpdateError {
		failure(
			.outcomeUnknown,
			"The update of \(Self.quoted(names)) was sent and its answer lost, and the remote could not tell whether it was committed (\(cause)). Nothing was changed locally; if the remote committed it, its value arrives like any remote change. Trying again may apply the update twice."
		)
	}

	private func failure(_ reason: Defaults.SyncedUpdateError.Reason, _ message: String) -> Defaults.SyncedUpdateError {
		Defaults.SyncedUpdateError(keyNames: names, reason: reason, message: message)
	}
}
