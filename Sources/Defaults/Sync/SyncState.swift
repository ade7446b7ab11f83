import Foundation

/// What a machine last agreed with the remote on, per key, the revision the watch resumes after, and which changes
/// recorded in the journal beside the settings file (`ChangeJournal`) are pushed: shared by every process of the
/// file, and changed only under the settings file's lock.
struct SyncState: Codable, Equatable {
	struct Record: Codable, Equatable {
		/// The remote's bytes for the key (`nil`: the key does not exist remotely; empty: a removal's tombstone, which
		/// has a revision like any value).
		var value: Data?
		/// The revision of the last change of the key this machine saw: the write's, or the removal's for a key that
		/// no longer exists (0: never seen). It orders events; the compare-and-swap uses ``expectedModRevision``.
		var modRevision: Int64
		/// When the remote value did not decode and was left alone: the local stored form at that time, encoded;
		/// the key is pending only once the local value moves away from it.
		var keptLocalValue: Data?
		var isUnreadable: Bool = false
		/// When the remote refused the local value (too large): `keptLocalValue` is that value, and `value` and
		/// `modRevision` the remote's record at the time. Optional, so that older state files still decode.
		var isHeldLocally: Bool? = nil
		/// Pushes sent since the last agreement whose outcome this machine does not know (the reply was lost): etcd
		/// may have committed any of them. A remote value equal to one of them is this machine's own write, not
		/// another machine's. Optional, so that older state files still decode.
		var unconfirmedPushes: [UnconfirmedPush]? = nil

		/// The mod revision a compare-and-swap must name: etcd compares a key that does not exist as 0, whatever
		/// revision removed it (which is why this package's removals leave a tombstone).
		var expectedModRevision: Int64 {
			value == nil ? 0 : modRevision
		}

		/// Whether a remote change to `value` (`nil` or empty: a removal) is one of this machine's pushes whose reply
		/// it never got.
		///
		/// A push is a compare-and-swap against the revision it names, so it can only have committed as the key's next
		/// change after that revision: a push named the record's revision (or 0, for a key that does not exist, which
		/// any removal makes true again), and no other machine's change came between (`intervening`: the remote change
		/// to this key held back since the agreement, if any). A value alone is not enough: another machine may store
		/// the same value later.
		func isUnconfirmedPush(of value: Data?, intervening: Defaults.RemoteEvent?) -> Bool {
			guard let unconfirmedPushes else {
				return false
			}
			return unconfirmedPushes.contains { push in
				guard push.value == value else {
					return false
				}
				// Written by an older version of the package: only the value is known.
				guard let expected = push.expectedModRevision else {
					return intervening == nil
				}
				switch intervening {
				case nil:
					return expected == expectedModRevision
				case .delete?:
					return expected == 0
				case .put?:
					return false
				}
			}
		}
	}

	/// One push sent and not confirmed.
	struct UnconfirmedPush: Codable, Equatable {
		/// The bytes pushed: ``SyncedValueCoding/tombstone`` for a removal (`nil` in older state files).
		var value: Data?
		/// The mod revision the push's compare-and-swap named. Optional, so that older state files still decode.
		var expectedModRevision: Int64? = nil
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

	static let currentFormat = 2

	static func newMachineID() -> Data {
		Data((0..<16).map { _ in UInt8.random(in: 0...255) })
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

	/// The first lines of a journal made anew beside this state: a line that carries the highest settled sequence on,
	/// so that no new line is taken for a settled one.
	var sequenceFloor: [ChangeJournal.Line] {
		let highest = settled?.values.max() ?? 0
		return highest > 0 ? [ChangeJournal.Line(s: highest, k: nil, p: nil)] : []
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

	/// How many unconfirmed pushes a key remembers; more than a few means etcd has been unreachable for long, and the
	/// oldest is the least likely to be the one committed.
	static let unconfirmedPushLimit = 16

	/// Notes that `value` is being pushed for `name` against `expectedModRevision`, before the request goes out.
	mutating func notePushSent(_ value: Data?, expectedModRevision: Int64, forKey name: String) {
		var record = records[name] ?? Record(value: nil, modRevision: 0)
		var unconfirmed = record.unconfirmedPushes ?? []
		let push = UnconfirmedPush(value: value, expectedModRevision: expectedModRevision)
		unconfirmed.removeAll { $0 == push }
		unconfirmed.append(push)
		record.unconfirmedPushes = Array(unconfirmed.suffix(Self.unconfirmedPushLimit))
		records[name] = record
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
