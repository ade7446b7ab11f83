import Foundation
import Synchronization

/// The bookkeeping of one atomic update's compare-and-swap loop: what each try wrote, which answers were lost, when
/// to give up, and how a lost answer's commit is told from another machine's.
///
/// Every try writes its values in the second wire form with a mark of its own, as pushes do: the machine id and a
/// sequence taken from the journal for that try (`SyncWorker.marksForUpdate(of:)`, a few at once). When a commit's
/// answer is lost (the leader died after committing, or the client gave up first), the value alone cannot tell,
/// since two machines incrementing 5 both write 6; the mark can. The try compared every key against the revision it read, so it
/// committed, if at all, as the key's first change after that revision: the next read finds the mark in the key, or,
/// when the key has moved on since, the key's history from that read says which change came first.
struct AtomicUpdateLoop {
	/// A key's new remote bytes (``SyncedValueCoding/tombstone``: removed), as agreed once committed.
	struct Write: Sendable {
		let name: String
		let bytes: Data?
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
		/// The first key it writes, the revision it compared that key against, and the revision of the read that
		/// found it: the try committed, if at all, as the key's first change after that read.
		let firstKey: String?
		let base: Int64
		let readRevision: Int64
	}

	/// What the keys hold remotely at a try's read.
	struct Current {
		var values: [String: Any] = [:]
		var modRevisions: [String: Int64] = [:]
		/// The remote bytes, by name, to tell a key the closure left as it was.
		var bytes: [String: Data] = [:]
		/// The revision of each key's read.
		var readRevisions: [String: Int64] = [:]
	}

	/// etcd refuses transactions of more than 128 operations by default: as many keys as a push's transaction.
	static let keyLimit = SyncWorker.pushBatchSize

	let names: [String]
	let keys: [String]
	/// The tries whose answer was lost and whose outcome is not known yet, by their mark's sequence.
	private(set) var unresolved: [Int: Attempt] = [:]
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

	private var namesText: String {
		Self.quoted(names)
	}

	/// `names` for a sentence: `'a', 'b'`.
	static func quoted(_ names: [String]) -> String {
		names.map { "'\($0)'" }.joined(separator: ", ")
	}

	/// The try, among this update's whose answer was lost, that a remote value carries the mark of, with the
	/// revision it was committed at.
	func committedAttempt(carrying bytes: Data?, at revision: Int64) -> (attempt: Attempt, revision: Int64)? {
		guard let mark = SyncedValueCoding.mark(of: bytes), let attempt = unresolved[mark.sequence],
			attempt.mark == mark
		else {
			return nil
		}
		return (attempt, revision)
	}

	/// The try that the remote committed after all, if a key read in `snapshots` carries its mark.
	func committedAttempt(in snapshots: [Defaults.RemoteSnapshot]) -> (attempt: Attempt, revision: Int64)? {
		for (index, key) in keys.enumerated() {
			if let entry = snapshots[index].entries.first(where: { $0.key == key }),
				let found = committedAttempt(carrying: entry.value, at: entry.modRevision)
			{
				return found
			}
		}
		return nil
	}

	/// The tries whose key has moved on from the revision they compared against, and not to their own commit: the
	/// key's history tells whether they came first.
	func attemptsToLookUp(in snapshots: [Defaults.RemoteSnapshot]) -> [Attempt] {
		unresolved.values.sorted { $0.mark.sequence < $1.mark.sequence }.filter { attempt in
			guard let key = attempt.firstKey, let index = keys.firstIndex(of: key) else {
				return false
			}
			let current = snapshots[index].entries.first { $0.key == key }?.modRevision ?? 0
			return current != attempt.base
		}
	}

	/// The key's first change after `attempt`'s read was not its commit: it never will be.
	mutating func didNotCommit(_ attempt: Attempt) {
		unresolved[attempt.mark.sequence] = nil
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
		unknownOutcome("the update ended before it could tell: \(cause)")
	}

	/// The keys' remote values and revisions in `snapshots` (one per key, in order).
	func currentValues(in snapshots: [Defaults.RemoteSnapshot]) throws -> Current {
		var current = Current()
		for (index, name) in names.enumerated() {
			current.readRevisions[name] = snapshots[index].revision
			guard let entry = snapshots[index].entries.first(where: { $0.key == keys[index] }) else {
				continue
			}
			current.modRevisions[name] = entry.modRevision
			current.bytes[name] = entry.value
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
			let bytes: Data?
			do {
				// A removal of a key the remote holds leaves a tombstone; a key that does not exist stays so.
				bytes =
					current.bytes[name] == nil && updated[name] == nil
					? nil : try SyncedValueCoding.pushedBytes(of: updated[name], mark: mark)
			} catch {
				throw failure(
					.refused, "The new value of '\(name)' is not a property list (\(error)); nothing was changed.")
			}
			// etcd compares a key that does not exist as revision 0 (a removed one has its tombstone's revision).
			let expected = current.modRevisions[name] ?? 0
			if SyncWorker.isSameValue(updated[name], asRemote: current.bytes[name]) {
				// Left as it was (read only, or set to the same value): compared, so that the update still rests on
				// it, but not written, so that it keeps its revision and another machine's change of it made
				// meanwhile is not turned into a lost conflict by a write of the same bytes.
				remoteWrites.append(
					.comparison(key: keys[index], value: current.bytes[name], expectedModRevision: expected))
				continue
			}
			writes.append(Write(name: name, bytes: bytes))
			remoteWrites.append(Defaults.RemoteWrite(key: keys[index], value: bytes, expectedModRevision: expected))
		}
		let firstKey = writes.first.map { key(of: $0.name) }
		let firstName = writes.first?.name ?? ""
		return Attempt(
			mark: mark, run: runs - 1, writes: writes, values: updated, remoteWrites: remoteWrites, firstKey: firstKey,
			base: current.modRevisions[firstName] ?? 0, readRevision: current.readRevisions[firstName] ?? 0)
	}

	private func key(of name: String) -> String {
		keys[names.firstIndex(of: name) ?? 0]
	}

	/// A read failed: before any commit went out nothing changed, and the update fails at once; after one whose
	/// answer was lost, it asks again until ``Defaults/SyncEngine/atomicUpdateResolveTime`` has passed.
	mutating func readFailed(_ error: Defaults.RemoteServiceError) throws {
		guard resolveDeadline != nil else {
			throw failure(
				Self.reason(of: error),
				"The remote could not be asked for the latest value of \(namesText) (\(error)), so the update was not made: an atomic update of a synced key needs the remote. Nothing was changed, locally or remotely."
			)
		}
		try checkResolveDeadline(error)
	}

	/// A commit got no answer (or one that says nothing of its outcome): the next read tells, by the mark.
	mutating func commitFailed(_ error: Defaults.RemoteServiceError, _ attempt: Attempt) throws {
		if error.isRefusal {
			// Refused before it ran: this try changed nothing.
			if resolveDeadline == nil {
				throw failure(
					.refused, "The remote refused the update of \(namesText) (\(error)); nothing was changed.")
			}
		} else if !attempt.writes.isEmpty {
			// A try that writes nothing changes nothing, committed or not.
			unresolved[attempt.mark.sequence] = attempt
			resolveDeadline = resolveDeadline ?? .now + Defaults.SyncEngine.atomicUpdateResolveTime
		}
		try checkResolveDeadline(error)
	}

	/// Another machine changed a key since the read: try again, a bounded number of times.
	mutating func conflicted() throws {
		conflicts += 1
		guard conflicts < Defaults.SyncEngine.atomicUpdateTries else {
			if resolveDeadline != nil {
				throw unknownOutcome("it kept conflicting with other machines' changes")
			}
			throw failure(
				.tooManyConflicts,
				"Other machines changed \(namesText) before each of \(conflicts) tries of the update could commit; nothing was changed."
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
			"The update of \(namesText) was sent and its answer lost, and the remote could not tell whether it was committed (\(cause)). Nothing was changed locally; if the remote committed it, its value arrives like any remote change. Trying again may apply the update twice."
		)
	}

	private func failure(_ reason: Defaults.SyncedUpdateError.Reason, _ message: String) -> Defaults.SyncedUpdateError {
		Defaults.SyncedUpdateError(keyNames: names, reason: reason, message: message)
	}

	private static func reason(of error: Defaults.RemoteServiceError) -> Defaults.SyncedUpdateError.Reason {
		error.isRefusal ? .refused : .unreachable
	}
}
