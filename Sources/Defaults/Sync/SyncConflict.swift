import Foundation
import Synchronization

extension Defaults {
	/// A local change that lost to another machine's: this machine pushed `discardedLocalValue` without knowing that
	/// the remote already held a newer value, so the remote value won (see the conflict rule in <doc:SyncingAcrossMachines>) and
	/// replaced the local one.
	///
	/// The values are stored forms (property-list values, `nil` for a removed key), as ``Defaults/Store`` holds them.
	/// To keep the local edit after all, write it again: it is then made knowing the winner, and wins.
	///
	/// ```swift
	/// let engine = Defaults.iCloud.configure(remote: etcd, prefix: "/defaults/editor/")
	/// for await conflict in engine.conflicts {
	/// 	if askUser("Keep your change of \(conflict.keyName)?") {
	/// 		// The store the engine syncs: `configure`'s `store`, the standard store unless another was named.
	/// 		try Defaults.standardStore.write(conflict.discardedLocalValue, forKey: conflict.keyName)
	/// 	}
	/// }
	/// ```
	public struct SyncConflict: @unchecked Sendable, CustomStringConvertible {
		/// The synced key's name.
		public let keyName: String
		/// The local stored form that was replaced; `nil` when the local change was a removal.
		public let discardedLocalValue: Any?
		/// The remote stored form that won; `nil` when the key was removed remotely or the remote value is not a
		/// synced stored form.
		public let winningRemoteValue: Any?
		/// The remote revision of the winning value (0 when it was a removal this machine did not see the revision
		/// of); the ``description`` names it.
		package let remoteRevision: Int64

		/// A sentence naming the key and both values.
		public var description: String {
			"'\(keyName)': the local value \(Self.describe(discardedLocalValue)) lost to the remote value \(Self.describe(winningRemoteValue)) (revision \(remoteRevision))"
		}

		static func describe(_ stored: Any?) -> String {
			stored.map { "\($0)" } ?? "(removed)"
		}
	}
}

extension SyncWorker {
	/// Tells the app that its local change of `name` lost: a failure, and the engine's ``Defaults/SyncEngine/conflicts``.
	func reportLostConflict(name: String, discarded: Any?, winner: Defaults.RemoteEntry?) {
		let winning = winner.flatMap { SyncedValueCoding.decode($0.value) }
		// The same value on both sides is not a loss.
		if Defaults.PropertyList.isEqualOrBothAbsent(discarded, winning) {
			return
		}
		let conflict = Defaults.SyncConflict(
			keyName: name, discardedLocalValue: discarded, winningRemoteValue: winning,
			remoteRevision: winner?.modRevision ?? 0)
		conflicts.send(conflict)
		reportFailure(
			of: name,
			"A local change lost a sync conflict: \(conflict). Another machine's change reached the remote first, so it was kept everywhere; write the value again to keep it."
		)
	}
}
