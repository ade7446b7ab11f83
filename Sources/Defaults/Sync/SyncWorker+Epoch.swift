import Foundation

// The prefix's epoch key (Docs/Sync.md, "A remote that lost its data"): a random id made once, which a remote that
// lost or replaced its data no longer holds, whatever its revision has climbed to since.
extension SyncWorker {
	/// The epoch key's name under the prefix: no synced key's (key names have no `.`, see `KeyNameRules`), so that an
	/// engine skips it as it skips every remote key it does not sync, older engines included. Its value is an id of 32 lowercase hex
	/// digits (pinned in `Fixtures/Sync/WireForms.plist`).
	static let epochName = ".defaults-epoch"

	/// The bytes of an epoch id: `id` in hex.
	static func newEpoch(id: Data = SyncState.newMachineID()) -> Data {
		Data(id.map { String(format: "%02x", $0) }.joined().utf8)
	}

	/// Why `snapshot` (read with `known`, the revision, and `knownEpoch`, the epoch this process knew before the
	/// read) is not of the remote the state knows, or `nil`. Called under the lock, where `state` is the file's: an
	/// epoch another process of the file settled after this read began is not an alarm, and when the remote holds
	/// it, that process has rejoined the remote already (its put-backs written, its new epoch made).
	func lostRemoteReason(
		_ snapshot: Defaults.RemoteSnapshot, epoch: Defaults.RemoteEntry?, known: Int64, knownEpoch: String?
	) -> String? {
		let held = epoch.map { String(decoding: $0.value, as: UTF8.self) }
		if let agreed = state.epoch, agreed != knownEpoch, held == agreed {
			return nil
		}
		if snapshot.revision < known {
			return "its revision went back from \(known) to \(snapshot.revision)"
		}
		guard let agreed = state.epoch, knownEpoch == agreed, held != agreed else {
			return nil
		}
		return epoch == nil
			? "its epoch key \(prefix)\(Self.epochName) is gone" : "its epoch key \(prefix)\(Self.epochName) changed"
	}

	/// After a full read: the state takes the remote's epoch, or this machine makes one where there is none (created
	/// only if still absent, in a transaction, so that machines agree on one). After a rejoin (`rejoined`), an epoch
	/// the state knew is replaced, so that every other machine finds the remote changed too (a restore from a snapshot
	/// taken after the epoch was made keeps it); only the epoch this process knew before its read (`knownEpoch`) is
	/// replaced, never one another process of the file put there. A write that fails or loses changes nothing, except
	/// that a rejoined state forgets its old epoch: the next full read takes the remote's, with no alarm. A refusal (a
	/// role that may only read) is not tried again. The file's state takes the result only if its epoch is still
	/// `knownEpoch`: one that another read (of this process or another) settled since is newer than this read's.
	func settleEpoch(_ entry: Defaults.RemoteEntry?, rejoined: Bool, knownEpoch: String?) async {
		var adopted = entry.map { String(decoding: $0.value, as: UTF8.self) }
		if !isEpochRefused, entry == nil || rejoined && adopted == knownEpoch && state.epoch == knownEpoch {
			let epoch = Self.newEpoch()
			let write = Defaults.RemoteWrite(
				key: prefix + Self.epochName, value: epoch, expectedModRevision: entry?.modRevision ?? 0)
			do {
				let written = try await remote.compareAndSwap(all: [write]) != nil
				adopted = written ? String(decoding: epoch, as: UTF8.self) : nil
			} catch {
				adopted = nil
				if case Defaults.RemoteServiceError.refused = error {
					isEpochRefused = true
				}
			}
		}
		if adopted != state.epoch, adopted != nil || rejoined {
			locked { _ in
				if state.epoch == knownEpoch {
					state.epoch = adopted
				}
			}
		}
	}
}
