import Foundation

// Atomic updates of a file store: read, change and write the file under its cross-process lock, so that no process's
// update is lost to another's.
extension Defaults.FileStore: AtomicallyUpdatingStore {
	/// Holds the store (its disk lock, against this process's threads, flushes and reloads) and the file's lock
	/// (against other processes) from reading the file to writing it, so that what `body` reads is the file as it is,
	/// and what it returns is in the file before any other process's update can read it.
	///
	/// The changes are written to the file before `apply` puts them in memory: if the file cannot be written, nothing
	/// has changed and no observer heard anything.
	package func updateAtomically<Result>(
		_ body: () throws -> (changes: [StoredChangeOfUpdate], result: Result),
		apply: ([StoredChangeOfUpdate]) -> Void
	) throws -> Result {
		var failures: [Defaults.Failure] = []
		var externallyChanged: Set<String> = []
		// Reported once the store is released: observers of other processes' changes may read or flush it.
		defer {
			failures.forEach(Defaults.report)
			if !externallyChanged.isEmpty {
				reportOutsideChanges(externallyChanged)
			}
		}
		return try disk.withLock { disk in
			try updateLocked(
				disk: &disk, failures: &failures, externallyChanged: &externallyChanged, body: body, apply: apply)
		}
	}

	private func updateLocked<Result>(
		disk: inout DiskState, failures: inout [Defaults.Failure], externallyChanged: inout Set<String>,
		body: () throws -> (changes: [StoredChangeOfUpdate], result: Result),
		apply: ([StoredChangeOfUpdate]) -> Void
	) throws -> Result {
		if let problem = file.createFolderIfMissing() {
			throw AtomicUpdateFailure(.storage, "\(problem) Nothing was updated.")
		}
		if let problem = file.lock(
			&disk.lockDescriptor, waitingAtMost: Self.updateLockWaitLimit, outcomeOfTimeout: "nothing was updated")
		{
			throw AtomicUpdateFailure(.storage, problem)
		}
		defer { unlock(&disk) }
		if !disk.hasRemovedStaleTemporaryFiles {
			disk.hasRemovedStaleTemporaryFiles = true
			file.removeStaleTemporaryFiles()
		}
		// The update writes the file's values with its changes on top, never this process's pending ones: memory's
		// values stand for the file's only while nothing is pending, else the file is read again.
		if disk.persisted == nil, let values = memory.withLock({ $0.dirtyKeys.isEmpty ? $0.values : nil }) {
			disk.persisted = Self.inOwnStorage(values)
		}
		if !file.version.isSame(as: disk.version) || disk.persisted == nil {
			let reread = take(file.readSettled(), failures: &failures)
			guard reread.mayReplaceFile else {
				throw AtomicUpdateFailure(
					.storage,
					"Nothing was updated: the file \(path) could not be read, and is not written over unseen. "
						+ failures.map(\.message).joined(separator: " "))
			}
			let changed = Self.changedKeys(from: knownFileValues(disk), to: reread.values)
			disk.persisted = reread.values
			disk.version = reread.version
			// Kept until the update has written: `install` may forget it, and it is the base of the changes below.
			let base = reread.values
			externallyChanged = install(reread.values, changedKeys: changed, disk: &disk)
			disk.persisted = base
		}

		let (changes, result) = try body()
		guard !changes.isEmpty else {
			forgetFileValuesIfMemoryHoldsThem(&disk)
			return result
		}
		var values = disk.persisted ?? [:]
		for change in changes {
			values[change.key] = change.value
		}
		var journalFailures: [Defaults.Failure] = []
		guard recordChanges(changes.map(\.key).sorted(), disk: &disk, failures: &journalFailures) else {
			throw AtomicUpdateFailure(
				.storage, "Nothing was updated: " + journalFailures.map(\.message).joined(separator: " "))
		}
		do {
			disk.version = .present(try file.replace(with: values))
		} catch {
			throw AtomicUpdateFailure(
				.storage, "Nothing was updated: the file \(path) could not be written: \(error).")
		}
		disk.persisted = values
		// A terminating signal came: memory takes no more writes (a write would wait for the end while this thread
		// holds the store the termination flush needs). The file holds the result, which is all that outlives us.
		guard TerminationFlush.acceptsWrites else {
			disk.isMemoryBehindTheFile = true
			return result
		}
		apply(changes)
		// The file holds these values already. Left pending, they would be written again at the next flush, over
		// whatever another process's update stored meanwhile: the lost update this exists to prevent. A key an
		// observer wrote again during `apply` stays pending with its newer value.
		memory.withLock { memory in
			for change in changes
			where Defaults.PropertyList.isEqualOrBothAbsent(memory.values[change.key], change.value) {
				memory.markClean(change.key)
			}
		}
		forgetFileValuesIfMemoryHoldsThem(&disk)
		externallyChanged.subtract(changes.lazy.map(\.key))
		return result
	}

	/// How long an update waits for the file's lock: longer than a flush, which can try again later, since many
	/// processes updating one file take turns with it.
	static let updateLockWaitLimit = Duration.seconds(10)
}
