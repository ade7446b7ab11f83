import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// What a file store knows of its file; guarded by the store's disk lock.
struct DiskState {
	/// The values as they are in the file, as far as this process knows: the base a flush applies its changes to.
	var persisted: [String: Any] = [:]
	/// Which version of the file `persisted` came from; `nil` when there was no file.
	var identity: FileIdentity?
	/// Open for the life of the process: closing any descriptor of a file drops the process's `flock` on it.
	var lockDescriptor: Int32 = -1
	var hasRemovedStaleTemporaryFiles = false
}

/// What a store took from its file: the values, which version of the file they came from, and whether the store may
/// write over the file.
struct FileRead {
	var values: [String: Any]
	var identity: FileIdentity?
	/// `false` when the file exists but could not be read, or did not parse and could not be moved aside: writing
	/// would replace data the store has never seen.
	var mayReplaceFile = true

	static var empty: FileRead { FileRead(values: [:], identity: nil) }

	/// A file that is there but not ours to replace.
	static var untouchable: FileRead { FileRead(values: [:], identity: nil, mayReplaceFile: false) }
}

extension Defaults.FileStore {
	var path: String { file.path }

	// MARK: Loading

	func load(failures: inout [Defaults.Failure]) {
		file.createFolderIfMissing()
		disk.withLock { disk in
			let loaded = readSettled(disk: &disk, failures: &failures)
			disk.persisted = loaded.values
			// An untouchable file keeps no identity, so every flush reads it again before it would write.
			disk.identity = loaded.identity
			memory.withLock { $0.values = loaded.values }
		}
	}

	/// Reads the file; a file that does not parse is read again under the lock until it settles, and moved aside
	/// if it is corrupt.
	private func readSettled(disk: inout DiskState, failures: inout [Defaults.Failure]) -> FileRead {
		let contents = file.read()
		guard case .unreadable = contents else {
			return take(contents, failures: &failures)
		}
		guard lock(&disk, failures: &failures) else {
			return .untouchable
		}
		defer { file.unlock(disk.lockDescriptor) }
		return take(file.readSettled(), failures: &failures)
	}

	/// What the store takes from `contents`; a corrupt file is moved aside, so this is for the lock holder only
	/// when `contents` is `.unreadable`.
	private func take(_ contents: SettingsFile.Contents, failures: inout [Defaults.Failure]) -> FileRead {
		switch contents {
		case .missing:
			return .empty
		case .values(let values, let identity):
			return FileRead(values: values, identity: identity)
		case .inaccessible(let reason):
			failures.append(inaccessibleFailure(reason))
			return .untouchable
		case .unreadable(let data, let identity, _) where data.isEmpty:
			// An empty file holds nothing to keep: it reads as an empty store.
			return FileRead(values: [:], identity: identity)
		case .unreadable(_, _, let reason):
			let (failure, isMoved) = moveAside(reason: reason)
			failures.append(failure)
			return isMoved ? .empty : .untouchable
		}
	}

	private func inaccessibleFailure(_ reason: String) -> Defaults.Failure {
		storageFailure(
			"The file \(path) could not be read (\(reason)). The store reads as empty and writes nothing to the file "
				+ "until it can read it, so that nothing in it is replaced unseen.")
	}

	/// Moves a corrupt file aside (see ``SettingsFile/moveAside()``).
	///
	/// - Returns: the failure to report, and whether the file was moved.
	private func moveAside(reason: String) -> (Defaults.Failure, isMoved: Bool) {
		switch file.moveAside() {
		case .success(let destination):
			let failure = storageFailure(
				"The file \(path) is corrupt (\(reason)). It was moved to \(destination) with its bytes "
					+ "intact, and the store starts empty.")
			return (failure, true)
		case .failure(let error):
			let failure = storageFailure(
				"The file \(path) is corrupt (\(reason)) and could not be moved aside (\(error.reason)); "
					+ "the store starts empty and will not write over it until it is moved or fixed.")
			return (failure, false)
		}
	}

	// MARK: Flushing

	/// Writes this process's changes to the file now, and takes in changes other processes made to it.
	///
	/// Writes reach the file without this call (within about 100 ms and at exit); call it where a value must be
	/// on disk at a known point, before handing the file to another program for example.
	///
	/// - Returns: `false` if the file could not be written; the changes stay pending and are tried again at the next
	///   flush.
	@discardableResult
	public func flush() -> Bool {
		var failures: [Defaults.Failure] = []
		let (isWritten, changedKeys) = disk.withLock { disk in
			flushLocked(disk: &disk, failures: &failures)
		}
		failures.forEach(Defaults.report)
		if !changedKeys.isEmpty {
			didChangeExternally(keys: changedKeys)
		}
		if isWritten {
			memory.withLock { $0.failedFlushes = 0 }
		} else {
			scheduleRetry()
		}
		return isWritten
	}

	private func flushLocked(disk: inout DiskState, failures: inout [Defaults.Failure]) -> (Bool, Set<String>) {
		let changes = memory.withLock { memory in
			memory.isFlushScheduled = false
			defer { memory.clearDirtyKeys() }
			return memory.dirtyKeys.map { key in (key: key, value: memory.values[key]) }
		}
		guard !changes.isEmpty else {
			return (true, reloadLocked(disk: &disk, failures: &failures))
		}
		file.createFolderIfMissing()
		guard lock(&disk, failures: &failures) else {
			restoreDirtyKeys(changes)
			return (false, [])
		}
		defer { file.unlock(disk.lockDescriptor) }
		if !disk.hasRemovedStaleTemporaryFiles {
			disk.hasRemovedStaleTemporaryFiles = true
			file.removeStaleTemporaryFiles()
		}

		var externallyChanged: Set<String> = []
		var isReread = false
		var values = disk.persisted
		if file.identity != disk.identity {
			let reread = take(file.readSettled(), failures: &failures)
			guard reread.mayReplaceFile else {
				restoreDirtyKeys(changes)
				return (false, [])
			}
			externallyChanged = Self.changedKeys(from: values, to: reread.values)
			values = reread.values
			disk.identity = reread.identity
			isReread = true
		}
		// The store's own copy goes, so that applying the changes does not copy every value; what they replace is
		// kept, to put the file's values back together if the write fails.
		disk.persisted = [:]
		var replaced: [(key: String, value: Any?)] = []
		replaced.reserveCapacity(changes.count)
		for change in changes {
			replaced.append((change.key, values[change.key]))
			values[change.key] = change.value
			externallyChanged.remove(change.key)
		}
		do {
			disk.identity = try file.replace(with: values)
		} catch {
			for original in replaced.reversed() {
				values[original.key] = original.value
			}
			disk.persisted = values
			restoreDirtyKeys(changes)
			failures.append(storageFailure("The file \(path) could not be written: \(error)."))
			// What was read from the file is taken in all the same: memory must not go on showing values the file
			// no longer holds.
			return (false, isReread ? install(values, changedKeys: externallyChanged) : [])
		}
		disk.persisted = values
		if isReread {
			externallyChanged = install(values, changedKeys: externallyChanged)
		}
		return (true, externallyChanged)
	}

	private func restoreDirtyKeys(_ changes: [(key: String, value: Any?)]) {
		memory.withLock { memory in
			memory.markDirty(changes.lazy.map(\.key))
		}
	}

	/// Makes `values` the stored values, keeping this process's unflushed changes on top.
	///
	/// - Returns: the keys among `changedKeys` that this process has not changed since.
	private func install(_ values: [String: Any], changedKeys: Set<String>) -> Set<String> {
		memory.withLock { memory in
			var installed = values
			for key in memory.dirtyKeys {
				installed[key] = memory.values[key]
			}
			memory.values = installed
			return changedKeys.subtracting(memory.dirtyKeys)
		}
	}

	static func changedKeys(from old: [String: Any], to new: [String: Any]) -> Set<String> {
		var changed: Set<String> = []
		for (key, value) in new {
			guard let previous = old[key], Defaults.PropertyList.isEqual(previous, value) else {
				changed.insert(key)
				continue
			}
		}
		for key in old.keys where new[key] == nil {
			changed.insert(key)
		}
		return changed
	}

	/// Whether this process has changes that have not reached the file.
	var hasPendingChanges: Bool {
		memory.withLock { !$0.dirtyKeys.isEmpty }
	}

	/// Waits for a flush that is under way: it took the changes it writes out of the pending set, so they are not
	/// pending, but not on disk either. Bounded, as a flush's wait for the lock is.
	func waitForFlushUnderWay() {
		disk.withLock { _ in }
	}

	// MARK: Reloading

	/// Takes in the file if another process changed it since this one last read or wrote it.
	func reloadIfChanged() {
		var failures: [Defaults.Failure] = []
		let changedKeys = disk.withLock { disk in
			reloadLocked(disk: &disk, failures: &failures)
		}
		failures.forEach(Defaults.report)
		if !changedKeys.isEmpty {
			didChangeExternally(keys: changedKeys)
		}
	}

	private func reloadLocked(disk: inout DiskState, failures: inout [Defaults.Failure]) -> Set<String> {
		guard file.identity != disk.identity else {
			return []
		}
		let reread = readSettled(disk: &disk, failures: &failures)
		guard reread.mayReplaceFile else {
			// Nothing trustworthy was read: memory keeps what it had rather than going empty.
			return []
		}
		let changed = Self.changedKeys(from: disk.persisted, to: reread.values)
		disk.persisted = reread.values
		disk.identity = reread.identity
		guard !changed.isEmpty else {
			return []
		}
		return install(reread.values, changedKeys: changed)
	}

	// MARK: Files

	private func storageFailure(_ message: String) -> Defaults.Failure {
		Defaults.Failure(keyName: "", reason: .storage, message: message)
	}

	/// Takes the file's cross-process lock, waiting at most ``lockWaitLimit``; a failure to take it is reported.
	private func lock(_ disk: inout DiskState, failures: inout [Defaults.Failure]) -> Bool {
		if let problem = file.lock(&disk.lockDescriptor, waitingAtMost: Self.lockWaitLimit) {
			failures.append(storageFailure(problem))
			return false
		}
		return true
	}
}
