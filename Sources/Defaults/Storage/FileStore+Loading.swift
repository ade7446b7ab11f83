import Foundation

// The first read of the file, and the corrupt-file policy: a file that does not parse is moved aside, never
// overwritten; one that cannot be moved is left alone, and the store does not write over it.
extension Defaults.FileStore {
	func load(failures: inout [Defaults.Failure]) {
		disk.withLock { disk in
			let loaded = readSettled(disk: &disk, failures: &failures)
			// Memory's values are the file's, and nothing is pending yet: one dictionary for both.
			disk.persisted = nil
			// An untouchable file's version is unknown, so every flush reads it again before it would write.
			disk.version = loaded.version
			memory.withLock { $0.values = loaded.values }
		}
	}

	/// Reads the file; a file that does not parse is read again under the lock until it settles, and moved aside
	/// if it is corrupt.
	func readSettled(disk: inout DiskState, failures: inout [Defaults.Failure]) -> FileRead {
		let contents = file.read()
		guard case .unreadable(_, _, let reason) = contents else {
			return take(contents, failures: &failures)
		}
		var lockFailures: [Defaults.Failure] = []
		guard lock(&disk, failures: &lockFailures) else {
			// Said with the reason the file did not read: that is what its owner must fix.
			let lockProblem = lockFailures.map(\.message).joined(separator: " ")
			failures.append(
				storageFailure(
					"The file \(path) does not read as settings (\(reason)) and is left as it is, never written "
						+ "over: \(lockProblem)"))
			return .untouchable
		}
		defer { unlock(&disk) }
		return take(file.readSettled(), failures: &failures)
	}

	/// What the store takes from `contents`; a corrupt file is moved aside, so this is for the lock holder only
	/// when `contents` is `.unreadable`.
	func take(_ contents: SettingsFile.Contents, failures: inout [Defaults.Failure]) -> FileRead {
		switch contents {
		case .missing:
			return .empty
		case .values(let values, let identity):
			return FileRead(values: values, version: .present(identity))
		case .inaccessible(let reason):
			failures.append(inaccessibleFailure(reason))
			return .untouchable
		case .unreadable(let data, let identity, _) where data.isEmpty:
			// An empty file holds nothing to keep: it reads as an empty store.
			return FileRead(values: [:], version: .present(identity))
		case .unreadable(_, _, let reason):
			let (failure, isMoved) = moveAside(reason: reason)
			failures.append(failure)
			return isMoved ? .empty : .untouchable
		}
	}

	func inaccessibleFailure(_ reason: String) -> Defaults.Failure {
		storageFailure(
			"The file \(path) could not be read (\(reason)). The store reads as empty and writes nothing to the file "
				+ "until it can read it, so that nothing in it is replaced unseen.")
	}

	/// Moves a corrupt file aside (see ``SettingsFile/moveAside()``).
	///
	/// - Returns: the failure to report, and whether the file was moved.
	func moveAside(reason: String) -> (Defaults.Failure, isMoved: Bool) {
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
}
