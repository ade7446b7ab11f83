import Foundation

/// Maps each file to its one store, and flushes every store when the process exits.
enum FileStoreRegistry {
	private static let stores = LockedState<[String: Defaults.FileStore]>([:])

	/// The store of the file at `url`. Its layers belong to the file, whichever opener comes first (`at(_:)`,
	/// `standard`, `suite(named:)`): a file in the configuration folder (`Defaults.FileStore.directory`) reads
	/// system-wide defaults and locks from `$XDG_CONFIG_DIRS`, and the standard file reads the launch arguments too;
	/// any other file reads neither. `systemFolders` replaces the folders for a new store (tests); the files there are
	/// named as the file is (``layers(of:configurationDirectory:standardURL:systemFolders:)``).
	static func store(at url: URL, systemFolders: [URL]? = nil) -> Defaults.FileStore {
		let file = SettingsFile(url: url)
		if let existing = stores.withLock({ $0[file.path] }) {
			return existing
		}
		// Outside the lock: finding the configuration folder may report a failure, whose handler may open stores.
		let layers =
			systemFolders.map { (folders: $0, name: file.namedFileName, isStandard: false) } ?? layers(of: file)
		var failures: [Defaults.Failure] = []
		let (store, isNew) = stores.withLock { stores in
			if let existing = stores[file.path] {
				return (existing, false)
			}
			// Created under the lock so that two threads opening one file cannot end up with two states.
			let store = Defaults.FileStore(
				file: file, systemFolders: layers.folders, systemFileName: layers.name, failures: &failures)
			if layers.isStandard {
				store.setArguments(Defaults.FileStore.argumentDomain(from: CommandLine.arguments))
			}
			stores[file.path] = store
			return (store, true)
		}
		// Reported outside the lock: a failure handler may open stores itself.
		failures.forEach(Defaults.report)
		if isNew {
			// While descriptors are still free: see `DispatchStart`.
			_ = DispatchStart.isStarted
			store.file.watch { [weak store] in store?.scheduleReload() }
			// One watch per system folder for both of its files; a missing folder costs a watch of the folder above.
			SettingsFile.watch(store.systemFiles + store.lockFiles) { [weak store] in
				guard let store else {
					return
				}
				// Off the watcher's thread, as the user's file's reload is: observers run on the reloading one. At the
				// descriptor limit Dispatch cannot start (it would trap), so the watcher's thread reloads.
				guard DispatchStart.isStarted else {
					store.reloadSystemLayer()
					return
				}
				DispatchQueue.global(qos: .utility).async { store.reloadSystemLayer() }
			}
		}
		return store
	}

	/// The layers the file reads besides its own values, by where it is (see ``store(at:systemFolders:)``): the system
	/// folders, the name of its files there, and whether it is the standard file.
	///
	/// The name is the file's name in the configuration folder, the domain's name: `<name>.plist` for a link
	/// `<folder>/<name>.plist` to a file elsewhere (dotfiles), whatever the file it leads to is called, as the
	/// `defaults` command names them. Only a file reached through a link from outside the folder is known there by the
	/// name of the file the link leads to.
	static func layers(
		of file: SettingsFile, configurationDirectory: URL = Defaults.FileStore.configurationDirectory(),
		standardURL: @autoclosure () -> URL = Defaults.FileStore.standardURL,
		systemFolders: @autoclosure () -> [URL] = Defaults.FileStore.systemConfigurationDirectories()
	) -> (folders: [URL], name: String, isStandard: Bool) {
		// As named and with links resolved: a settings file linked into the folder (dotfiles) is still the folder's.
		let configurationFolder = SettingsFile(url: configurationDirectory.appending(path: "settings.plist"))
		let isNamedInFolder =
			(file.namedPath as NSString).deletingLastPathComponent
			== (configurationFolder.namedPath as NSString).deletingLastPathComponent
		guard isNamedInFolder || file.folderPath == configurationFolder.folderPath else {
			return ([], file.namedFileName, false)
		}
		return (
			systemFolders(), isNamedInFolder ? file.namedFileName : file.fileName,
			file.path == SettingsFile(url: standardURL()).path
		)
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
