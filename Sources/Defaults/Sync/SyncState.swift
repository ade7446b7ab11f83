import Foundation

/// What a machine last agreed with the remote on, per key, and the revision the watch resumes after.
///
/// It is not the offline queue: which keys wait to be pushed is recorded on its own (``SyncQueue``), when the change
/// happens, so that a lost settings file or a lost state file never reads as the user removing every key.
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

	/// The remote revision everything up to which has been applied; the watch resumes after it.
	var revision: Int64 = 0
	var records: [String: Record] = [:]

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

/// The synced keys with a local change made on purpose (a write or a removal through the package, or a change another
/// process wrote to a readable settings file) that the remote has not taken yet. Recorded when the engine hears the
/// change, in a file of its own beside the state file, so that a lost state file does not drop it.
struct SyncQueue: Codable, Equatable {
	var names: Set<String> = []
	/// Names another process (`defaults`) changed on purpose in the settings file, not yet taken into `names` by an
	/// engine. Optional, so that older queue files still decode.
	var recordedElsewhere: Set<String>? = nil
}
