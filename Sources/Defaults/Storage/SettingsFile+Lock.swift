import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

// The cross-process lock every load, flush and reload of a settings file takes.
extension SettingsFile {
	/// Takes the cross-process lock: a `flock` on the sibling lock file, opened into `descriptor` for this one
	/// operation and closed by ``unlock(_:)``, so that a process with many stores holds no descriptor between
	/// operations.
	///
	/// The wait is bounded: a writer that is stopped or hung must not hang this process's flush or its exit.
	///
	/// - Returns: `nil` once locked, else why not, as a sentence.
	func lock(_ descriptor: inout Int32, waitingAtMost limit: Duration) -> String? {
		// Taking the lock comes before every change to the folder: the place to refuse changes root must not make.
		if let sentence = changeRefusal() {
			return sentence
		}
		// Nothing is ever written over a device, FIFO or folder, so nothing is made beside one either (no
		// `/dev/.zero.lock`).
		let (anchor, anchorRefusal) = FolderAnchor.opened(for: self)
		guard let anchor else {
			return anchorRefusal
		}
		defer { anchor.release() }
		var status = stat()
		if fstatat(anchor.descriptor, anchor.name(fileName), &status, 0) == 0, status.st_mode & S_IFMT != S_IFREG {
			return "The file \(path) is not a regular file (\(FileOwnership.kind(of: status))); nothing is written to "
				+ "it and no lock file is made beside it."
		}
		// Not following links: a link planted at the lock path must not make us create a file elsewhere.
		descriptor = movedAboveStandardStreams(
			openat(anchor.descriptor, anchor.name(lockName), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600))
		guard descriptor >= 0 else {
			let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
			return "The lock file \(lockPath) could not be opened: \(reason)."
		}
		FileOwnership.giveToOwnerOfFolder(descriptor: descriptor, folderPath: folderPath)
		let deadline = ContinuousClock.now + limit
		while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
			guard errno == EWOULDBLOCK || errno == EINTR else {
				let reason = String(cString: strerror(errno))
				unlock(&descriptor)
				return "The lock file \(lockPath) could not be locked: \(reason)."
			}
			guard ContinuousClock.now < deadline else {
				unlock(&descriptor)
				return "The file \(path) stayed locked by another process for \(limit); the changes stay in memory "
					+ "and are written at the next try."
			}
			usleep(10_000)
		}
		return nil
	}

	/// Releases the lock taken with ``lock(_:waitingAtMost:)`` and closes its descriptor.
	func unlock(_ descriptor: inout Int32) {
		guard descriptor >= 0 else {
			return
		}
		_ = flock(descriptor, LOCK_UN)
		close(descriptor)
		descriptor = -1
	}
}
