import Foundation

// Taking in what another process wrote to the file, and telling observers about the keys that changed.
extension Defaults.FileStore {
	/// Takes in the file if another process changed it since this one last read or wrote it.
	///
	/// Changes of this process still pending with no flush to come (their flush was refused as too large, and waits
	/// for the values to change) are flushed after a change of the file: another process may have made room.
	func reloadIfChanged() {
		var failures: [Defaults.Failure] = []
		let (changedKeys, fileChanged) = disk.withLock { disk in
			let known = disk.version
			let changedKeys = reloadLocked(disk: &disk, failures: &failures)
			return (changedKeys, !disk.version.isSame(as: known))
		}
		failures.forEach(Defaults.report)
		if !changedKeys.isEmpty {
			reportOutsideChanges(changedKeys)
		}
		if fileChanged, memory.withLock({ !$0.dirtyKeys.isEmpty && $0.markFlushScheduled() }) {
			scheduleFlush()
		}
	}

	func reloadLocked(disk: inout DiskState, failures: inout [Defaults.Failure]) -> Set<String> {
		guard !file.version.isSame(as: disk.version) else {
			return []
		}
		let reread = readSettled(disk: &disk, failures: &failures)
		guard reread.mayReplaceFile else {
			// Nothing trustworthy was read: memory keeps what it had rather than going empty.
			return []
		}
		let changed = Self.changedKeys(from: knownFileValues(disk), to: reread.values)
		disk.persisted = reread.values
		disk.version = reread.version
		guard !changed.isEmpty else {
			forgetFileValuesIfMemoryHoldsThem(&disk)
			return []
		}
		return install(reread.values, changedKeys: changed, disk: &disk)
	}
}

extension Defaults.FileStore {
	/// Reloads the file soon; many change events in a row cost one reload.
	func scheduleReload() {
		let shouldSchedule = memory.withLock { memory in
			defer { memory.isReloadScheduled = true }
			return !memory.isReloadScheduled
		}
		guard shouldSchedule else {
			return
		}
		guard DispatchStart.isStarted else {
			// Out of descriptors, Dispatch would trap: the reload runs here, on the watcher's thread.
			memory.withLock { $0.isReloadScheduled = false }
			reloadIfChanged()
			return
		}
		DispatchQueue.global(qos: .utility).async { [self] in
			// Cleared first, so that a change during the reload schedules another one.
			memory.withLock { $0.isReloadScheduled = false }
			reloadIfChanged()
		}
	}
}
