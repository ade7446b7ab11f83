/// Something that makes the updates of some of a store's names against a remote first (a sync engine: a
/// compare-and-swap against the remote). The layer that has one registers it with the store's runtime; the runtime
/// holds it weakly, and the synchronous `Defaults.update` hands it the updates of its names.
protocol RemoteUpdater: AnyObject, Sendable {
	/// Whether updates of `name` are made against the remote.
	func updatesRemotely(_ name: String) -> Bool

	/// Updates `names` of `store` against the remote while the calling thread waits: `transform` gets the remote's
	/// stored forms (a name missing: nothing stored) and returns the new ones, on the calling thread, perhaps more
	/// than once. Returns which run the remote committed (0 for the first), or `nil` when no updater syncs the names
	/// any more (nothing was done: the caller updates them in the store).
	func updateWaiting(
		_ names: [String], in store: any Defaults.Store, _ transform: ([String: Any]) throws -> [String: Any]
	) throws -> Int?
}

/// A registration of a remote updater, held weakly: an updater that is gone is no longer asked.
final class WeakRemoteUpdater {
	weak var updater: (any RemoteUpdater)?

	init(_ updater: any RemoteUpdater) {
		self.updater = updater
	}
}

extension StoreRuntime {
	/// Makes `updater` one of the store's remote updaters, for as long as it lives.
	func addRemoteUpdater(_ updater: any RemoteUpdater) {
		let dropped = remoteUpdaterRegistrations.withLock { registrations -> [WeakRemoteUpdater] in
			let gone = registrations.filter { $0.updater == nil }
			registrations.removeAll { $0.updater == nil }
			registrations.append(WeakRemoteUpdater(updater))
			return gone
		}
		withExtendedLifetime(dropped) {}
	}

	/// The store's remote updaters that are alive, in the order they were registered.
	var remoteUpdaters: [any RemoteUpdater] {
		remoteUpdaterRegistrations.withLock { $0.compactMap(\.updater) }
	}

	/// The first of the store's remote updaters that updates one of `names`, if any: the synchronous update hands it
	/// the update.
	func remoteUpdater(ofAnyOf names: [String]) -> (any RemoteUpdater)? {
		remoteUpdaters.first { updater in names.contains { updater.updatesRemotely($0) } }
	}
}
