/// Something that makes the updates of some of a store's names against a remote first (a sync engine: a
/// compare-and-swap against the remote), so that an update of those names must be awaited. The layer that has one
/// registers it with the store's runtime; the runtime holds it weakly and knows nothing else of it.
protocol RemoteUpdater: AnyObject, Sendable {
	/// Whether updates of `name` are made against the remote.
	func updatesRemotely(_ name: String) -> Bool
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

	/// Those of `names` that a remote updater of the store updates: a synchronous update refuses them.
	func namesUpdatedRemotely(among names: some Sequence<String>) -> [String] {
		let updaters = remoteUpdaters
		guard !updaters.isEmpty else {
			return []
		}
		return names.filter { name in updaters.contains { $0.updatesRemotely(name) } }
	}
}
