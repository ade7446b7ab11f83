import Foundation

/// Maps each file to its one store, and flushes every store when the process exits.
enum FileStoreRegistry {
	private static let stores = LockedState<[String: Defaults.FileStore]>([:])

	/// The store of the file at `url`; a new store reads system-wide defaults from a file of the same name in each
	/// of `systemFolders` (a store already open keeps the folders it was opened with).
	static func store(at url: URL, systemFolders: [URL] = []) -> Defaults.FileStore {
		let file = SettingsFile(url: url)
		var failures: [Defaults.Failure] = []
		let (store, isNew) = stores.withLock { stores in
			if let existing = stores[file.path] {
				return (existing, false)
			}
			// Created under the lock so that two threads opening one file cannot end up with two states.
			let store = Defaults.FileStore(file: file, systemFolders: systemFolders, failures: &failures)
			stores[file.path] = store
			return (store, true)
		}
		// Reported outside the lock: a failure handler may open stores itself.
		failures.forEach(Defaults.report)
		if isNew {
			// While descriptors are still free: see `DispatchStart`.
			_ = DispatchStart.isStarted
			store.file.watch { [weak store] in store?.scheduleReload() }
			for systemFile in store.systemFiles + store.lockFiles {
				systemFile.watch { [weak store] in
					guard let store else {
						return
					}
					// Off the watcher's thread, as the user's file's reload is: observers run on the reloading one. At
					// the descriptor limit Dispatch cannot start (it would trap), so the watcher's thread reloads.
					guard DispatchStart.isStarted else {
						store.reloadSystemLayer()
						return
					}
					DispatchQueue.global(qos: .utility).async { store.reloadSystemLayer() }
				}
			}
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
