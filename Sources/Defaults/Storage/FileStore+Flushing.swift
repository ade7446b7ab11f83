import Foundation

// Writing the keys this process changed into the file, merged with what other processes wrote meanwhile.
extension Defaults.FileStore {
	/// Writes this process's changes to the file now, and takes in changes other processes made to it.
	///
	/// Writes reach the file without this call (within about 100 ms and at exit); call it where a value must be
	/// on disk at a known point, before handing the file to another program for example.
	///
	/// - Returns: `false` if the file could not be written; the changes stay pending and are tried again at the next
	///   flush.
	@discardableResult
	public func flush() -> Bool {
		// Called by an observer of an update's change: the update holds the store and writes the file itself.
		if UpdateScope.isUpdating(self) {
			return true
		}
		var failures: [Defaults.Failure] = []
		let (isWritten, changedKeys, outcome) = disk.withLock { disk in
			let (isWritten, changedKeys) = flushLocked(disk: &disk, failures: &failures)
			return (isWritten, changedKeys, disk.takeWriteOutcome())
		}
		finishFlush(isWritten: isWritten, changedKeys: changedKeys, failures: failures, outcome: outcome)
		return isWritten
	}

	/// The last flush of a process that is ending (the exit flush; `defaults`, whose one flush is its last): like
	/// ``flush()``, but changes it cannot write are forgotten, under the same lock, so that no other flush takes
	/// them meanwhile, and a failure says that no later try comes.
	///
	/// - Returns: the names of the keys whose changes could not be written, sorted.
	package func flushBeforeTheEnd() -> [String] {
		if UpdateScope.isUpdating(self) {
			return []
		}
		var failures: [Defaults.Failure] = []
		let (lost, changedKeys) = disk.withLock { disk -> ([String], Set<String>) in
			let (isWritten, changedKeys) = flushLocked(disk: &disk, failures: &failures, isLastTry: true)
			// No retry follows this flush, and a later one (a test's, a tool's) must not take its flags for its own.
			_ = disk.takeWriteOutcome()
			guard !isWritten else {
				return ([], changedKeys)
			}
			let lost = memory.withLock { memory -> [String] in
				defer { memory.clearDirtyKeys() }
				return memory.dirtyKeys.sorted()
			}
			return (lost, changedKeys)
		}
		failures.forEach(Defaults.report)
		if !changedKeys.isEmpty {
			reportOutsideChanges(changedKeys)
		}
		return lost
	}

	func withFileLocked<T>(_ body: (_ values: [String: Any]) -> (received: [String: Any?], result: T)) -> T? {
		if UpdateScope.isUpdating(self) {
			return nil
		}
		var failures: [Defaults.Failure] = []
		var result: T?
		var hasEnded = false
		// Run before this returns: the optional parameter of `flushLocked` only looks escaping.
		let (isWritten, changedKeys, outcome) = withoutActuallyEscaping(body) {
			body -> (Bool, Set<String>, DiskState.WriteOutcome) in
			disk.withLock { disk -> (Bool, Set<String>, DiskState.WriteOutcome) in
				guard !disk.hasEnded else {
					hasEnded = true
					return (false, [], DiskState.WriteOutcome())
				}
				let (isWritten, changedKeys) = flushLocked(disk: &disk, failures: &failures) { values in
					let outcome = body(values)
					result = outcome.result
					return outcome.received
				}
				return (isWritten, changedKeys, disk.takeWriteOutcome())
			}
		}
		if hasEnded {
			Self.waitForTheEnd()
		}
		finishFlush(isWritten: isWritten, changedKeys: changedKeys, failures: failures, outcome: outcome)
		return isWritten ? result : nil
	}

	/// Ends the store's locked steps for good, once a step under way is done (it holds the disk lock): the process is
	/// ending, and a step started now (sync writing its state beside the file) would be cut off halfway, leaving its
	/// temporary file behind.
	func endLockedSteps() {
		disk.withLock { disk in
			disk.hasEnded = true
			// No locked step of this process writes beside the file any more: a temporary file of its own still there
			// was cut short some other way. Under the disk lock, which every write of this process's holds, so that a
			// flush of a write made during the exit is never left without its temporary file.
			file.removeStaleTemporaryFiles(ofProcess: getpid())
		}
	}

	/// Where a locked step asked for after the end waits: the process is about to end, and the step must not run.
	private static func waitForTheEnd() -> Never {
		while true {
			sleep(60)
		}
	}

	/// What follows a flush, outside the lock (a failure handler or an observer may use the store): its failures and
	/// the outside changes it took in are told, and a failed write is tried again later.
	private func finishFlush(
		isWritten: Bool, changedKeys: Set<String>, failures: [Defaults.Failure], outcome: DiskState.WriteOutcome
	) {
		if outcome.wroteALargeFile {
			FreedMemory.giveBack()
		}
		failures.forEach(Defaults.report)
		if !changedKeys.isEmpty {
			reportOutsideChanges(changedKeys)
		}
		if isWritten {
			memory.withLock { $0.failedFlushes = 0 }
		} else if !outcome.isRefusedAsTooLarge {
			scheduleRetry()
		}
	}

	/// Merges this process's changes into the file under its lock, recording their names in the change journal first.
	///
	/// - Parameter whileLocked: run under the lock once the file's values (with this process's changes) are known;
	///   returns values received from elsewhere to write into the file, which are neither recorded nor pending here
	///   (a key with a change of this process not yet written is left out).
	func flushLocked(
		disk: inout DiskState, failures: inout [Defaults.Failure], isLastTry: Bool = false,
		whileLocked: ((_ values: [String: Any]) -> [String: Any?])? = nil
	) -> (Bool, Set<String>) {
		let keepsFileValues = disk.persisted != nil
		// Memory's values alone, nothing to merge under the lock: taken as a snapshot in temporary tables, which the file
		// is written from unless it changed meanwhile (`writeSnapshot`).
		let takesSnapshot = !keepsFileValues && whileLocked == nil
		var snapshotKeys: Set<String> = []
		var (changes, memoryValues) = memory.withLock {
			memory -> ([(key: String, value: Any?)], [String: Any]?) in
			memory.isFlushScheduled = false
			if takesSnapshot {
				snapshotKeys = memory.takeDirtyKeys()
				return ([], snapshotKeys.isEmpty ? nil : memory.values)
			}
			defer { memory.clearDirtyKeys() }
			let changes = memory.dirtyKeys.map { key in (key: key, value: memory.values[key]) }
			// Without a copy of the file's values, memory's are the file's with exactly these changes on top: taken
			// in the same lock as the changes.
			let isWriting = !changes.isEmpty || whileLocked != nil
			return (changes, isWriting && !keepsFileValues ? memory.values : nil)
		}
		guard !changes.isEmpty || !snapshotKeys.isEmpty || whileLocked != nil else {
			return (true, reloadLocked(disk: &disk, failures: &failures))
		}
		// Taken at once, on this thread, so that a write during the flush does not copy memory's values on its own.
		var snapshot: ValueSnapshot?
		var fileValuesAndChanges: [String: Any]?
		if takesSnapshot {
			snapshot = ValueSnapshot(taking: &memoryValues)
		} else {
			fileValuesAndChanges = memoryValues.map(Self.inOwnStorage)
			memoryValues = nil
		}
		if let problem = file.createFolderIfMissing() {
			failures.append(storageFailure(problem))
			restoreDirtyKeys(changes)
			restoreDirtyKeys(snapshotKeys)
			return (false, [])
		}
		guard lock(&disk, failures: &failures, isLastTry: isLastTry) else {
			restoreDirtyKeys(changes)
			restoreDirtyKeys(snapshotKeys)
			return (false, [])
		}
		defer { unlock(&disk) }
		if !disk.hasRemovedStaleTemporaryFiles {
			disk.hasRemovedStaleTemporaryFiles = true
			file.removeStaleTemporaryFiles()
		}
		if let taken = snapshot {
			if file.version.isSame(as: disk.version) {
				return writeSnapshot(taken, keys: snapshotKeys, disk: &disk, failures: &failures)
			}
			// The file changed: its values are merged with memory's as a copy of memory's values is.
			snapshot = nil
			let values = taken.dictionary()
			fileValuesAndChanges = values
			changes = snapshotKeys.map { key in (key: key, value: values[key]) }
			snapshotKeys = []
		}

		var changedOutside: Set<String> = []
		var isReread = false
		var values = disk.persisted ?? fileValuesAndChanges ?? [:]
		if !file.version.isSame(as: disk.version) {
			let reread = take(file.readSettled(), failures: &failures)
			guard reread.mayReplaceFile else {
				restoreDirtyKeys(changes)
				return (false, [])
			}
			// From memory's values, the changed keys include this flush's, which are taken out below.
			changedOutside = Self.changedKeys(from: values, to: reread.values)
			values = reread.values
			disk.version = reread.version
			isReread = true
		}
		// On a base of the file's values (kept, or read again) the changes go on top, and what they replace is kept to
		// put the file's values back together if the write fails. A base of memory's values holds the changes already;
		// if the write fails, memory, with the keys pending again, still tells the file's values (the file is
		// unchanged).
		let canRestore = keepsFileValues || isReread
		// The store's own copy goes, so that applying the changes does not copy every value.
		disk.persisted = nil
		var replaced: [(key: String, value: Any?)] = []
		if canRestore {
			replaced.reserveCapacity(changes.count)
			for change in changes {
				replaced.append((change.key, values[change.key]))
				values[change.key] = change.value
				changedOutside.remove(change.key)
			}
		}
		// Recorded before the file changes: a crash in between leaves a name whose value did not change, which its
		// reader finds unchanged, where the other order could lose the record of a change.
		// After a failed write: the file is unchanged, so on a base of the file's values its values are put back
		// together and kept for the next flush.
		func keepTheFileValues() {
			guard canRestore else {
				return
			}
			for original in replaced.reversed() {
				values[original.key] = original.value
			}
			disk.persisted = values
		}
		if !recordChanges(changes.map(\.key).sorted(), disk: &disk, failures: &failures) {
			keepTheFileValues()
			restoreDirtyKeys(changes)
			return (false, isReread ? install(values, changedKeys: changedOutside, disk: &disk) : [])
		}
		var received: Set<String> = []
		if let whileLocked {
			let pending = memory.withLock { $0.dirtyKeys }
			for (key, value) in whileLocked(values) where !pending.contains(key) {
				values[key] = value
				received.insert(key)
			}
		}
		guard !changes.isEmpty || !received.isEmpty else {
			disk.persisted = values
			if isReread {
				return (true, install(values, changedKeys: changedOutside, disk: &disk))
			}
			forgetFileValuesIfMemoryHoldsThem(&disk)
			return (true, [])
		}
		do {
			disk.version = .present(try file.replace(with: values))
		} catch {
			keepTheFileValues()
			restoreDirtyKeys(changes)
			// Only this process's own values make it too large for sure: values read from a file another process
			// changed, or received by sync, may shrink without a write here, and the timed retry must then come.
			disk.isRefusedAsTooLarge = error is BinaryPropertyList.TooLarge && !isReread && received.isEmpty
			failures.append(storageFailure("The file \(path) could not be written: \(error)."))
			// What was read from the file is taken in all the same: memory must not go on showing values the file
			// no longer holds.
			return (false, isReread ? install(values, changedKeys: changedOutside, disk: &disk) : [])
		}
		disk.persisted = values
		disk.hasWrittenALargeFile = values.count >= FreedMemory.largeFileValueCount
		if isReread || !received.isEmpty {
			changedOutside = install(values, changedKeys: changedOutside.union(received), disk: &disk)
		} else {
			forgetFileValuesIfMemoryHoldsThem(&disk)
		}
		return (true, changedOutside)
	}

	/// Writes the file from `snapshot`, memory's values with the changes of `keys` on top, the file being unchanged
	/// since this store last read or wrote it. No copy of the file's values is kept afterwards (`DiskState.persisted`):
	/// memory's keys that are not pending hold them, keys written since the snapshot are pending.
	private func writeSnapshot(
		_ snapshot: ValueSnapshot, keys: Set<String>, disk: inout DiskState, failures: inout [Defaults.Failure]
	) -> (Bool, Set<String>) {
		// After a failure the file is unchanged, and memory, with the keys pending again, still tells its values.
		guard
			recordChanges(
				ChangeJournal(besideSettingsFile: file).append(sorting: keys), disk: &disk, failures: &failures)
		else {
			restoreDirtyKeys(keys)
			return (false, [])
		}
		do {
			disk.version = .present(try file.replace(with: snapshot))
		} catch {
			restoreDirtyKeys(keys)
			disk.isRefusedAsTooLarge = error is BinaryPropertyList.TooLarge
			failures.append(storageFailure("The file \(path) could not be written: \(error)."))
			return (false, [])
		}
		disk.hasWrittenALargeFile = snapshot.count >= FreedMemory.largeFileValueCount
		return (true, [])
	}

	/// Appends `names` to the change journal beside the file, if there is one; a failure is reported once until an
	/// append succeeds again.
	///
	/// - Returns: whether the file may change: the names are recorded, or nothing keeps a journal.
	func recordChanges(_ names: [String], disk: inout DiskState, failures: inout [Defaults.Failure]) -> Bool {
		recordChanges(ChangeJournal(besideSettingsFile: file).append(names), disk: &disk, failures: &failures)
	}

	/// Reports the failure of an append to the change journal once until an append succeeds again.
	///
	/// - Returns: whether the file may change.
	private func recordChanges(
		_ appended: Result<[ChangeJournal.Line], ChangeJournal.AppendFailure>, disk: inout DiskState,
		failures: inout [Defaults.Failure]
	) -> Bool {
		switch appended {
		case .success:
			disk.isJournalFailureReported = false
			return true
		case .failure(let failure):
			if !disk.isJournalFailureReported {
				disk.isJournalFailureReported = true
				failures.append(
					storageFailure(
						"\(failure.sentence) The changes of \(path) stay in memory and are tried again: a change of a synced key not recorded there would not be pushed."
					))
			}
			return false
		}
	}

	func restoreDirtyKeys(_ changes: [(key: String, value: Any?)]) {
		memory.withLock { memory in
			memory.markDirty(changes.lazy.map(\.key))
		}
	}

	func restoreDirtyKeys(_ keys: Set<String>) {
		guard !keys.isEmpty else {
			return
		}
		memory.withLock { $0.markDirty(keys) }
	}

	/// Makes `values`, the file's values (`disk.persisted`), the stored values, keeping this process's unflushed
	/// changes on top; with none, memory and `disk` share one dictionary, and `disk` forgets it.
	///
	/// - Returns: the keys among `changedKeys` that this process has not changed since.
	func install(_ values: [String: Any], changedKeys: Set<String>, disk: inout DiskState) -> Set<String> {
		let changed = memory.withLock { memory in
			var installed = values
			for key in memory.dirtyKeys {
				installed[key] = memory.values[key]
			}
			memory.values = installed
			return changedKeys.subtracting(memory.dirtyKeys)
		}
		forgetFileValuesIfMemoryHoldsThem(&disk)
		return changed
	}

	/// What the store knows of the file's values: `disk.persisted`, else memory's values, in storage of their own.
	/// Memory's pending keys hold this process's changes rather than the file's values: every caller compares the
	/// result with a file it read again and leaves the pending keys out of what it reports (`install`).
	func knownFileValues(_ disk: DiskState) -> [String: Any] {
		if let persisted = disk.persisted {
			return persisted
		}
		return Self.inOwnStorage(memory.withLock { $0.values })
	}

	/// `values` copied into storage of its own: taken from memory under its lock, a dictionary shares memory's storage,
	/// and a write while it is held would copy every value on the writer's thread. This copies them on the caller's.
	static func inOwnStorage(_ values: [String: Any]) -> [String: Any] {
		var copy = values
		copy.reserveCapacity(copy.count)
		return copy
	}

	/// Forgets `disk.persisted` when memory holds the same values, no change of this process being pending: one
	/// dictionary of the store's values instead of two (memory's keys that are not pending always hold the file's
	/// values, as far as the store knows them).
	func forgetFileValuesIfMemoryHoldsThem(_ disk: inout DiskState) {
		guard disk.persisted != nil, !disk.isMemoryBehindTheFile, memory.withLock({ $0.dirtyKeys.isEmpty }) else {
			return
		}
		disk.persisted = nil
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

	/// Forgets this process's changes that have not reached the file, so that no retry writes them.
	///
	/// For tests that leave a store whose file cannot be written: a retry after the test removed its folder would
	/// otherwise make the folder again.
	func discardPendingChanges() {
		memory.withLock { $0.clearDirtyKeys() }
	}

	/// Whether this process has changes that have not reached the file.
	var hasPendingChanges: Bool {
		memory.withLock { !$0.dirtyKeys.isEmpty }
	}

	/// Whether changes wait to be written, asked under the disk lock, so with no flush under way. A flush takes the
	/// changes it writes out of the pending set before it writes them: asked without the lock, the answer could be
	/// "none" while a flush that began a moment after a wait for the lock is still writing them, and a termination
	/// would end the process before they reached the disk. Bounded, as a flush's wait for the lock is.
	var hasPendingChangesOnceNoFlushIsUnderWay: Bool {
		// On a thread in the middle of an update the store is held already, and the update's changes are in the file.
		if UpdateScope.isUpdating(self) {
			return false
		}
		return disk.withLock { _ in hasPendingChanges }
	}
}

extension DiskState {
	/// What the end of a flush does besides reporting, outside the lock.
	struct WriteOutcome {
		var wroteALargeFile = false
		var isRefusedAsTooLarge = false
	}

	/// The flags a flush set for its end, cleared for the next.
	mutating func takeWriteOutcome() -> WriteOutcome {
		defer {
			hasWrittenALargeFile = false
			isRefusedAsTooLarge = false
		}
		return WriteOutcome(wroteALargeFile: hasWrittenALargeFile, isRefusedAsTooLarge: isRefusedAsTooLarge)
	}
}

/// Gives the C library's free memory back to the system after a flush of a large file.
///
/// Writes to a large store make and free blocks of megabytes: its dictionary's tables as it grows, and where a flush
/// merges with a file changed meanwhile, a copy of the store's values (see `inOwnStorage`) and the binary property
/// list (a flush of memory's values alone takes them in ``TemporaryTable``s, mapped and unmapped, instead). glibc's
/// `malloc` serves the first block of that size from a mapping of its own and unmaps it when freed, but then raises
/// its threshold for such mappings, so every later one comes from the heap and, once freed, stays resident in its free
/// lists (issue 32). `malloc_trim` returns those free pages, and the main arena's top. It is looked up at run time,
/// since other C libraries (musl) have none; the flush pays for it, and only for files of at least
/// ``largeFileValueCount`` values.
enum FreedMemory {
	/// From this many values, a copy of a store's values (8,192 slots of 48 bytes: 384 KB) is larger than glibc's first
	/// threshold for a mapping of its own (128 KB), and the buffers that stay are large.
	static let largeFileValueCount = 4_096

	/// The address of glibc's `malloc_trim`, else 0.
	private static let trim: Int = {
		#if os(Linux)
			guard let symbol = dlsym(nil, "malloc_trim") else {
				return 0
			}
			return Int(bitPattern: symbol)
		#else
			return 0
		#endif
	}()

	static func giveBack() {
		guard let pointer = UnsafeRawPointer(bitPattern: trim) else {
			return
		}
		_ = unsafeBitCast(pointer, to: (@convention(c) (Int) -> Int32).self)(0)
	}
}
