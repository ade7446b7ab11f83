import Foundation

/// Maps each file to its one store, and flushes every store when the process exits.
enum FileStoreRegistry {
	private static let stores = LockedState<[String: Defaults.FileStore]>([:])

	static func store(at url: URL) -> Defaults.FileStore {
		let file = SettingsFile(url: url)
		var failures: [Defaults.Failure] = []
		let (store, isNew) = stores.withLock { stores in
			if let existing = stores[file.path] {
				return (existing, false)
			}
			// Created under the lock so that two threads opening one file cannot end up with two states.
			let store = Defaults.FileStore(file: file, failures: &failures)
			stores[file.path] = store
			return (store, true)
		}
		// Reported outside the lock: a failure handler may open stores itself.
		failures.forEach(Defaults.report)
		if isNew {
			// While descriptors are still free: see `DispatchStart`.
			_ = DispatchStart.isStarted
			store.file.watch { [weak store] in store?.scheduleReload() }
		}
		return store
	}

	static func allStores() -> [Defaults.FileStore] {
		stores.withLock { Array($0.values) }
	}

	private static let exitFlush: Void = {
		atexit {
			Defaults.FileStore.flushAllBeforeTheEnd()
		}
	}()

	/// Makes the process flush every store when it exits normally or is stopped by a terminating signal left at its
	/// default action: Linux Foundation writes nothing by itself.
	static func installExitFlush() {
		_ = exitFlush
		TerminationFlush.install()
	}
}
