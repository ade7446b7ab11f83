import Foundation

/// What a machine last agreed with the remote on, per key, the revision the watch resumes after, and which changes
/// recorded in the journal beside the settings file (`ChangeJournal`) are pushed: shared by every process of the
/// file, and changed only under the settings file's lock.
struct SyncState: Codable, Equatable {
	struct Record: Codable, Equatable {
		/// The remote's bytes for the key (`nil`: the key does not exist remotely; a removal's tombstone, empty or
		/// marked, has a revision like any value).
		var value: Data?
		/// The revision of the last change of the key this machine saw: the write's, or the removal's for a key that
		/// no longer exists (0: never seen). It orders events; the compare-and-swap uses ``expectedModRevision``.
		var modRevision: Int64
		/// When the remote value did not decode and was left alone: the local stored form at that time, encoded,
		/// which is then the value agreed on locally.
		var keptLocalValue: Data?
		var isUnreadable: Bool = false
		/// When the remote refused the local value (too large): `keptLocalValue` is that value, and `value` and
		/// `modRevision` the remote's record at the time. Optional, so that older state files still decode.
		var isHeldLocally: Bool? = nil
		/// The highest line of the key settled at this revision without a push: the local value was the agreed one
		/// (written back to it, or removed again), or too large for the remote. A push of this settings file made
		/// before it, whose reply was lost, may still commit over this revision; its value is then older than the
		/// local one, which goes out again over it (``SyncWorker/apply(_:local:)``). Optional, so that older state
		/// files still decode.
		var settledWithoutPush: Int? = nil

		/// Held locally with a put-back (sequence 0) not known to be written (`SyncWorker.putBackPush`).
		var isPutBack: Bool {
			isHeldLocally == true && SyncedValueCoding.mark(of: keptLocalValue)?.sequence == 0
		}

		/// The mod revision a compare-and-swap must name: etcd compares a key that does not exist as 0, whatever
		/// revision removed it (which is why this package's removals leave a tombstone).
		var expectedModRevision: Int64 {
			value == nil ? 0 : modRevision
		}
	}

	/// 2 for this form; absent in the first form, which had no `machine` nor `settled` and kept its pending keys
	/// in a queue file.
	var format: Int? = Self.currentFormat
	/// The id every process of this settings file pushes under: 16 random bytes, made with the state.
	var machine: Data? = Self.newMachineID()
	/// The remote revision everything up to which has been applied; the watch resumes after it.
	var revision: Int64 = 0
	var records: [String: Record] = [:]
	/// The highest journal sequence of each key whose push is decided (written, lost, or found needless): a key is
	/// pending while the journal holds a line of it with a higher one.
	var settled: [String: Int]? = [:]
	/// The id the remote's epoch key held when last read (`SyncWorker.settleEpoch`): a remote without it, or with
	/// another, lost or replaced its data. Absent in older states, which take the remote's at their next full read.
	var epoch: String?
	/// The prefix whose records, revision and epoch these are: one settings file syncs one prefix, and an engine of
	/// another prefix on the same file is refused (``SyncWorker/StateOfAnotherPrefix``). Absent in older states, which
	/// take the prefix of the first engine that steps under the file's lock.
	var prefix: String?

	/// A sequence above every one a push or an atomic update of this state has sent, taken ``sequenceBlock`` at a time
	/// so that the state is written once per block: a journal made anew, and the in-memory journal of a new run,
	/// start after it, so that a push whose reply was lost and that commits later never settles a change that took
	/// its number. Optional, so that older state files still decode.
	var sequencesReserved: Int? = nil

	static let currentFormat = 2
	static let sequenceBlock = 1024

	static func newMachineID() -> Data {
		Data((0..<16).map { _ in UInt8.random(in: 0...255) })
	}

	/// The highest revision of the remote this state has seen: the watch's and reads' (``revision``), or a write's
	/// (an atomic update's commit does not move ``revision``). A remote that answers below it is not the one this
	/// state knows.
	var knownRevision: Int64 {
		max(revision, records.values.lazy.map(\.modRevision).max() ?? 0)
	}

	/// The highest sequence of `name` whose push is decided.
	func settledSequence(of name: String) -> Int {
		settled?[name] ?? 0
	}

	/// Marks the lines of `name` up to `sequence` as decided.
	mutating func settle(_ name: String, upTo sequence: Int) {
		var settled = self.settled ?? [:]
		settled[name] = max(settled[name] ?? 0, sequence)
		self.settled = settled
	}

	/// The first lines of a journal made anew beside this state: a line that carries the highest settled or
	/// reserved sequence on, so that no new line is taken for a settled one or one a push may have sent.
	var sequenceFloor: [ChangeJournal.Line] {
		let highest = max(settled?.values.max() ?? 0, sequencesReserved ?? 0)
		return highest > 0 ? [ChangeJournal.Line(s: highest, k: nil, p: nil)] : []
	}

	/// Makes ``sequencesReserved`` cover `sequence`, which a push or an update is about to send.
	mutating func reserveSequences(through sequence: Int) {
		if sequence > sequencesReserved ?? 0 {
			sequencesReserved = sequence + Self.sequenceBlock
		}
	}

	/// The highest sequence of each name in `names` with a line in `lines` that is not settled.
	func pending(in lines: [ChangeJournal.Line], among names: Set<String>) -> [String: Int] {
		var pending: [String: Int] = [:]
		for line in lines {
			guard let name = line.k, names.contains(name), line.s > settledSequence(of: name) else {
				continue
			}
			pending[name] = max(pending[name] ?? 0, line.s)
		}
		return pending
	}

	/// The stored form the local store holds if nothing changed locally since the last agreement.
	func agreedLocalValue(forKey name: String) -> Any? {
		guard let record = records[name] else {
			return nil
		}
		let bytes = record.isUnreadable || record.isHeldLocally == true ? record.keptLocalValue : record.value
		return bytes.flatMap(SyncedValueCoding.decode)
	}
}
