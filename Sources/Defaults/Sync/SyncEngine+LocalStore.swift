import Foundation

// The one place where sync touches the package's internals: how it hears local changes, how it applies remote ones,
// where it keeps its state file, and Storage's binary property-list reader and writer for the bytes a synced value
// travels as. Re-point these when the write primitive, the change hub or the reader moves.
extension Defaults.SyncEngine {
	/// Hears every change of the keys named `names` and wakes the engine: writes in this process through a commit
	/// tap of the store's runtime (far cheaper than an observation; for a store without a settings file, the tap is
	/// what records the change in the journal), outside changes through the runtime's outside listeners, which only
	/// wake it (another process's change is in the journal if it was made on purpose); by name only, nothing decoded.
	static func observeLocalChanges(
		of names: [String], in store: any Defaults.Store, recordingIn intents: IntentLog, wake: WakeSignal
	) -> LocalChangeObservation {
		let watched = Set(names)
		var handlers: [String: @Sendable () -> Void] = [:]
		for name in watched {
			handlers[name] = {
				intents.noteWrite(name)
				wake.signal()
			}
		}
		let runtime = StoreRuntime.of(store)
		let removeTaps = runtime.addCommitTaps(handlers)
		let removeOutsideListener = runtime.addOutsideListener { keys in
			if keys.contains(where: watched.contains) {
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
	///
	/// A live engine of the same settings file that keeps its state in another file is reported (`.unsupported`):
	/// the two share the change journal beside the settings file, and each compacts it by the records of its own
	/// state, dropping the lines of the other's unpushed changes. Only this process's engines are known here.
	static func registerAsRemoteUpdater(_ engine: Defaults.SyncEngine) {
		if journal(of: engine.store) != nil, let stateFile = engine.stateFile?.standardizedFileURL,
			let other = engines(of: engine.store).compactMap(\.stateFile).first(where: {
				$0.standardizedFileURL != stateFile
			})
		{
			Defaults.report(
				Defaults.Failure(
					keyName: engine.prefix, reason: .unsupported,
					message:
						"The sync engine of '\(engine.prefix)' keeps its state in \(stateFile.path), and another engine of the same settings file in \(other.path): a settings file has one sync state, and the two would drop each other's unpushed changes from the journal they share. Give every engine of a store the same stateFile (by default the one beside the settings file)."
				))
		}
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

	/// The state file beside a file store's settings file (`<settings>.plist.sync.json`); `nil` for other stores,
	/// whose state then lives as long as the process.
	static func defaultStateFile(for store: any Defaults.Store) -> URL? {
		guard let fileStore = store as? any FileBackedStore else {
			return nil
		}
		return fileStore.url.deletingLastPathComponent().appending(
			path: fileStore.url.lastPathComponent + ".sync.json")
	}

	/// Reads the state, and for a store kept in a settings file makes the change journal beside it and the state if
	/// neither is there, under the file's lock: from then on every flush of the file, in any process, records its
	/// changes, and a state file missing beside a journal was lost (another process starting at the same time made
	/// both at once).
	static func loadState(from stateFile: URL?, for store: any Defaults.Store) -> SyncState.Loaded {
		guard let fileStore = store as? any FileBackedStore else {
			return SyncState.load(from: stateFile)
		}
		let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: fileStore.url))
		let loaded = fileStore.withFileLocked { _ -> (received: [String: Any?], result: SyncState.Loaded) in
			guard case .missing = journal.read(latestOnly: true) else {
				return ([:], SyncState.load(from: stateFile, hadState: true))
			}
			let loaded = SyncState.load(from: stateFile)
			if case .none = loaded {
				SyncState().save(to: stateFile)
			}
			_ = journal.replace(with: loaded.state?.sequenceFloor ?? [])
			return ([:], loaded)
		}
		return loaded ?? SyncState.load(from: stateFile)
	}

	/// The change journal beside `store`'s settings file; `nil` for a store without one.
	static func journal(of store: any Defaults.Store) -> ChangeJournal? {
		(store as? any FileBackedStore).map { ChangeJournal(besideSettingsFile: SettingsFile(url: $0.url)) }
	}

	/// What running a step under the settings file's lock did.
	enum LockedStep<T> {
		/// The store has no settings file.
		case noFile
		case done(T)
		/// The file could not be locked, read or written (Storage reported it).
		case failed
	}

	/// Runs `body` under `store`'s settings file lock (see `FileBackedStore.withFileLocked`).
	static func withSettingsFileLocked<T>(
		of store: any Defaults.Store, _ body: (_ values: [String: Any]) -> (received: [String: Any?], result: T)
	) -> LockedStep<T> {
		guard let fileStore = store as? any FileBackedStore else {
			return .noFile
		}
		return fileStore.withFileLocked(body).map { .done($0) } ?? .failed
	}

	/// Ends the locked steps of `store`'s settings file as the process ends (a step under way ends first).
	static func endLockedSteps(of store: any Defaults.Store) {
		(store as? any FileBackedStore)?.endLockedSteps()
	}

	/// What trying the push lock of a settings file found.
	enum PushLockAttempt {
		case locked(Int32)
		/// Another process (or engine) holds it.
		case busy
		/// No settings file, or a lock that cannot be used (reported by nobody: passes then overlap).
		case unavailable
	}

	/// Tries, without waiting, the lock beside `store`'s settings file that one push pass of the file holds at a
	/// time (`.<name>.plist.sync.push.lock`).
	static func tryPushLock(of store: any Defaults.Store) -> PushLockAttempt {
		guard let fileStore = store as? any FileBackedStore else {
			return .unavailable
		}
		let lockFile = SettingsFile(besideFileAt: URL(filePath: SettingsFile(url: fileStore.url).path + ".sync.push"))
		var descriptor: Int32 = -1
		var isBusy = false
		guard lockFile.lock(&descriptor, waitingAtMost: .zero, onTimeout: { isBusy = true }) == nil else {
			return isBusy ? .busy : .unavailable
		}
		return .locked(descriptor)
	}

	/// Releases a push lock ``tryPushLock(of:)`` took (`nil`: none was).
	static func releasePushLock(_ descriptor: Int32?) {
		if var descriptor {
			SettingsFile(besideFileAt: URL(filePath: "/")).unlock(&descriptor)
		}
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
