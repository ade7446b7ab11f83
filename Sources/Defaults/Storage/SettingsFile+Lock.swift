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
	/// - Parameter outcomeOfTimeout: what the caller does when the wait runs out, for the sentence that says so.
	/// - Returns: `nil` once locked, else why not, as a sentence.
	func lock(
		_ descriptor: inout Int32, waitingAtMost limit: Duration,
		outcomeOfTimeout: String = "the changes stay in memory and are written at the next try",
		onTimeout: (() -> Void)? = nil
	) -> String? {
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
		// Not following links: a link planted at the lock path must not make us create a file elsewhere. Made afresh
		// when it can be, since only a file this process made may be given to the folder's owner: a hard link to
		// `/etc/shadow` planted at the lock path must not be handed to the user who planted it.
		let flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
		var opened = openat(anchor.descriptor, anchor.name(lockName), flags | O_CREAT | O_EXCL, 0o600)
		let isNew = opened >= 0
		if opened < 0, errno == EEXIST {
			opened = openat(anchor.descriptor, anchor.name(lockName), flags)
		}
		descriptor = movedAboveStandardStreams(opened)
		guard descriptor >= 0 else {
			let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
			return "The lock file \(lockPath) could not be opened: \(reason)."
		}
		if isNew {
			FileOwnership.keep(descriptor: descriptor, ownerOf: nil, orFolderOf: anchor)
		} else if let reason = untrustedLockReason(descriptor, in: anchor) {
			unlock(&descriptor)
			return "The lock file \(lockPath) is not used, and nothing is written: \(reason)."
		}
		let deadline = ContinuousClock.now + limit
		// From 0.1 ms up to 10 ms: a holder doing short updates in a row (`Defaults.update` from many processes) is
		// between two of them only briefly, and a waiter that always slept 10 ms would seldom find the lock free.
		var pause: UInt32 = 100
		while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
			guard errno == EWOULDBLOCK || errno == EINTR else {
				let reason = String(cString: strerror(errno))
				unlock(&descriptor)
				return "The lock file \(lockPath) could not be locked: \(reason)."
			}
			guard ContinuousClock.now < deadline else {
				onTimeout?()
				unlock(&descriptor)
				return "The file \(path) stayed locked by another process for \(limit); \(outcomeOfTimeout)."
			}
			usleep(pause)
			pause = min(pause * 2, 10_000)
		}
		return nil
	}

	/// Why the lock file found open at `descriptor` is not one this package made, or `nil` when it may be: a
	/// regular file with no other name, belonging to the folder's owner, to root or to this process's user.
	private func untrustedLockReason(_ descriptor: Int32, in anchor: FolderAnchor) -> String? {
		var status = stat()
		var folder = stat()
		guard fstat(descriptor, &status) == 0, fstatat(anchor.descriptor, anchor.name("."), &folder, 0) == 0 else {
			return String(cString: strerror(errno))
		}
		guard status.st_mode & S_IFMT == S_IFREG else {
			return "it is \(FileOwnership.kind(of: status))"
		}
		guard status.st_nlink == 1 else {
			return "it has \(status.st_nlink) names (a hard link to another file)"
		}
		guard [folder.st_uid, 0, geteuid()].contains(status.st_uid) else {
			return
				"it belongs to \(describeUser(status.st_uid)), not to the folder's owner \(describeUser(folder.st_uid))"
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
