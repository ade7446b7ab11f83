import Foundation

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

// The file behind a store as the store knows it, and the cross-process lock every load, flush and reload takes.
extension Defaults.FileStore {
	var path: String { file.path }

	func storageFailure(_ message: String) -> Defaults.Failure {
		Defaults.Failure(keyName: "", reason: .storage, message: message)
	}

	/// Takes the file's cross-process lock, waiting at most ``lockWaitLimit``; a failure to take it is reported.
	func lock(_ disk: inout DiskState, failures: inout [Defaults.Failure]) -> Bool {
		if let problem = file.lock(&disk.lockDescriptor, waitingAtMost: Self.lockWaitLimit) {
			failures.append(storageFailure(problem))
			return false
		}
		return true
	}
}
