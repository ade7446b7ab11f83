import Foundation

/// What a file store knows of its file; guarded by the store's disk lock.
struct DiskState {
	/// The values as they are in the file, as far as this process knows: the base a flush applies its changes to.
	///
	/// `nil` while memory's values are the file's for every key no change of this process waits for (the store read
	/// or wrote the file with nothing pending then, or wrote it from memory's values, which a flush does unless the file
	/// changed meanwhile or it merges values under the lock; writes since are pending keys): the store then keeps one
	/// dictionary of its values, not two (issue 32's memory per key), and an operation that needs the file's values
	/// takes them from memory (`knownFileValues`), or re-reads the file when pending keys hide some of them.
	var persisted: [String: Any]? = nil
	/// Set when memory may hold other values than the file for keys that are not pending (an atomic update wrote the
	/// file after a terminating signal, when memory takes no more writes): `persisted` is then always kept.
	var isMemoryBehindTheFile = false
	/// Which version of the file `persisted` came from: ``FileVersion/unknown`` until the file was read (or known to
	/// be missing), so that a store never writes over a file it has not read.
	var version: FileVersion = .unknown
	/// The lock file's descriptor while the lock is held, else -1: it is opened and closed by each operation.
	var lockDescriptor: Int32 = -1
	var hasRemovedStaleTemporaryFiles = false
	/// Set once the process is ending and the store's last flush is done: no locked step of a layer above (sync,
	/// which writes its state beside the file) starts any more, so that none is cut off halfway by the end.
	var hasEnded = false
	/// Whether a failure to append to the change journal was reported, since the last append that succeeded.
	var isJournalFailureReported = false
	/// How long a flush waits for another process's lock on the file before it gives up and tries later. Tests that
	/// hold the lock on purpose while a flush waits raise it, so that a slow machine does not end the wait first.
	var lockWaitLimit = Duration.seconds(2)
	/// Set by a flush that wrote a large file, for the end of the flush to give the allocator's free memory back.
	var hasWrittenALargeFile = false
	/// Set by a flush refused because this process's values would take more than a settings file may hold: no timed
	/// retry follows (it would write up to 64 MiB again, every minute, to the same refusal); the next write flushes.
	var isRefusedAsTooLarge = false
}

/// What a store took from its file: the values, which version of the file they came from, and whether the store may
/// write over the file.
struct FileRead {
	var values: [String: Any]
	var version: FileVersion
	/// `false` when the file exists but could not be read, or did not parse and could not be moved aside: writing
	/// would replace data the store has never seen.
	var mayReplaceFile = true

	/// No file: nothing to lose by writing one.
	static var empty: FileRead { FileRead(values: [:], version: .missing) }

	/// A file that is there but not ours to replace; its version is unknown, so every flush reads it again first.
	static var untouchable: FileRead { FileRead(values: [:], version: .unknown, mayReplaceFile: false) }
}

// The file behind a store as the store knows it, and the cross-process lock every load, flush and reload takes.
extension Defaults.FileStore {
	var path: String { file.path }

	func storageFailure(_ message: String) -> Defaults.Failure {
		Defaults.Failure(keyName: "", reason: .storage, message: message)
	}

	/// Takes the file's cross-process lock, waiting at most `DiskState.lockWaitLimit`; a failure to take it is
	/// reported.
	///
	/// - Parameter isLastTry: no flush follows this one (the process is ending), for the sentence a timeout gives.
	func lock(_ disk: inout DiskState, failures: inout [Defaults.Failure], isLastTry: Bool = false) -> Bool {
		let outcome =
			isLastTry
			? "the process is ending, so no later try will write the changes"
			: "the changes stay in memory and are written at the next try"
		if let problem = file.lock(&disk.lockDescriptor, waitingAtMost: disk.lockWaitLimit, outcomeOfTimeout: outcome) {
			failures.append(storageFailure(problem))
			return false
		}
		return true
	}

	/// Releases the lock taken with ``lock(_:failures:)``.
	func unlock(_ disk: inout DiskState) {
		file.unlock(&disk.lockDescriptor)
	}
}
