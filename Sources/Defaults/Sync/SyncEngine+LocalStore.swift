import Foundation

// The one place where sync touches the package's internals: how it hears local changes, how it applies remote ones,
// where it keeps its state file, and Storage's binary property-list reader and writer for the bytes a synced value
// travels as. Re-point these when the write primitive, the change hub or the reader moves.
extension Defaults.SyncEngine {
	/// Counts every change of the keys named `names` in `changes` and wakes the engine: writes in this process
	/// through a commit tap of the store's runtime (the write bumps its key's counter directly; far cheaper than an
	/// observation), outside changes through the runtime's outside listeners; by name only, nothing decoded.
	static func observeLocalChanges(
		of names: [String], in store: any Defaults.Store, countingIn changes: LocalChanges, wake: WakeSignal
	) -> LocalChangeObservation {
		let watched = Set(names)
		var handlers: [String: @Sendable () -> Void] = [:]
		for name in watched {
			let counter = changes.counter(for: name)
			handlers[name] = {
				counter.bump()
				wake.signal()
			}
		}
		let runtime = StoreRuntime.of(store)
		let removeTaps = runtime.addCommitTaps(handlers)
		let removeOutsideListener = runtime.addOutsideListener { keys in
			for name in keys where watched.contains(name) {
				changes.note(name)
				wake.signal()
			}
		}
		return LocalChangeObservation {
			removeTaps()
			removeOutsideListener()
		}
	}

	/// Registers `engine` with its store's runtime as a remote updater of the names it syncs, for as long as it
	/// lives: a synchronous update of the store then refuses those names, and an asynchronous one finds the engine.
	static func registerAsRemoteUpdater(_ engine: Defaults.SyncEngine) {
		StoreRuntime.of(engine.store).addRemoteUpdater(engine)
	}

	/// The live engines of `store`, in the order they were made.
	static func engines(of store: any Defaults.Store) -> [Defaults.SyncEngine] {
		StoreRuntime.of(store).remoteUpdaters.compactMap { $0 as? Defaults.SyncEngine }
	}

	/// Beneath a lock, if an administrator locked the key: the remote value is the user's, and the file must hold
	/// what the sync state records.
	static func applyRemoteValue(_ stored: Any?, forKey name: String, in store: any Defaults.Store) {
		store.commit(stored, forKey: name, beneathLocks: true)
	}

	/// Puts the store's pending writes on disk, so that the sync state never records agreement on a value the
	/// settings file does not hold yet (a machine killed in between would take its older value for a local edit).
	///
	/// - Returns: whether everything is on disk; always `true` for a store without a file.
	static func makeLocalValuesDurable(in store: any Defaults.Store) -> Bool {
		guard let fileStore = store as? any FileBackedStore else {
			return true
		}
		return fileStore.flush()
	}

	/// Whether the store found its settings file gone, empty or unreadable (moved aside as corrupt, deleted,
	/// truncated, its permissions changed) since the engine last put back what it lost: a store that reads empty for
	/// that reason is not a wish to remove every key. It stays so after the store writes a sound file again.
	static func isSettingsFileLost(for store: any Defaults.Store) -> Bool {
		settingsFileLossMark(for: store) != 0
	}

	/// 0 when the store found no loss of its file since the last ``clearSettingsFileLoss(for:ifStill:)``.
	static func settingsFileLossMark(for store: any Defaults.Store) -> Int {
		(store as? any FileBackedStore)?.fileLossMark ?? 0
	}

	/// Forgets the losses up to `mark`, unless the store found another since.
	static func clearSettingsFileLoss(for store: any Defaults.Store, ifStill mark: Int) {
		(store as? any FileBackedStore)?.clearFileLoss(ifStill: mark)
	}

	/// The state file beside a file store's settings file (`<settings>.plist.sync.json`); `nil` for other stores,
	/// whose queue then lives as long as the process.
	static func defaultStateFile(for store: any Defaults.Store) -> URL? {
		guard let fileStore = store as? any FileBackedStore else {
			return nil
		}
		return fileStore.url.deletingLastPathComponent().appending(
			path: fileStore.url.lastPathComponent + ".sync.json")
	}

	/// The state file beside the settings file at `settingsFile`, as Storage spells that file's path.
	static func stateFile(besideSettingsFile settingsFile: URL) -> URL {
		URL(filePath: SettingsFile(url: settingsFile).path + ".sync.json")
	}

	/// Runs `body` holding the cross-process lock Storage keeps beside the file at `url` (waiting at most `limit`),
	/// or, when it could not be taken, with the sentence saying why.
	static func withFileLock<Result>(
		of url: URL, waitingAtMost limit: Duration, _ body: (_ lockProblem: String?) -> Result
	) -> Result {
		let lockFile = SettingsFile(besideFileAt: url)
		var descriptor: Int32 = -1
		let lockProblem = lockFile.lock(&descriptor, waitingAtMost: limit)
		defer { lockFile.unlock(&descriptor) }
		return body(lockProblem)
	}

	/// The bytes of the file at `url` beside a settings file, read through Storage's one way (no link followed, the
	/// settings file's owner rule).
	static func readFileBeside(at url: URL) -> SettingsFile.BesideFileContents {
		SettingsFile(besideFileAt: url).readBesideFile()
	}

	/// Replaces the file at `url` beside a settings file through Storage's one way (an exclusive temporary file, no
	/// link followed, root's rules for the settings file); `false` when it could not.
	static func replaceFileBeside(at url: URL, with data: Data, mode: mode_t) -> Bool {
		SettingsFile(besideFileAt: url).replaceBesideFile(with: data, mode: mode) == nil
	}
}

/// A running observation of local changes; cancelling it stops the handler.
struct LocalChangeObservation: Sendable {
	let cancel: @Sendable () -> Void
}

// Storage's binary property-list writer and reader, for the bytes a synced value travels as.
extension SyncedValueCoding {
	static func binaryPropertyList(of value: Any) throws -> Data {
		try BinaryPropertyList.encode(value)
	}

	/// The value in `data`, or `nil` unless it is a binary property list the package's bounded reader accepts.
	static func value(ofBinaryPropertyList data: Data) -> Any? {
		guard BinaryPropertyList.isBinary(data) else {
			return nil
		}
		return try? BinaryPropertyList.decode(data)
	}
}
