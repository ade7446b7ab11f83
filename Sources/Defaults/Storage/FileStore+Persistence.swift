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

/// Tells one version of a file from another without reading it: a rename brings a new inode, a rewrite in place a
/// new modification time or size.
struct FileIdentity: Equatable {
	var device: UInt64
	var inode: UInt64
	var size: Int64
	var modificationSeconds: Int64
	var modificationNanoseconds: Int64

	init(_ status: stat) {
		device = UInt64(status.st_dev)
		inode = UInt64(status.st_ino)
		size = Int64(status.st_size)
		#if canImport(Darwin)
			modificationSeconds = Int64(status.st_mtimespec.tv_sec)
			modificationNanoseconds = Int64(status.st_mtimespec.tv_nsec)
		#else
			modificationSeconds = Int64(status.st_mtim.tv_sec)
			modificationNanoseconds = Int64(status.st_mtim.tv_nsec)
		#endif
	}

	/// The identity of the file at `path`, or `nil` if there is none.
	static func ofFile(atPath path: String) -> FileIdentity? {
		var status = stat()
		guard stat(path, &status) == 0 else {
			return nil
		}
		return FileIdentity(status)
	}
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

/// The contents of a store's file at one moment.
enum FileContents {
	case missing
	case values([String: Any], FileIdentity)
	/// Bytes that are not a property list holding a dictionary.
	case unreadable(Data, FileIdentity, reason: String)
	/// The file exists but could not be opened or read (permissions, I/O error).
	case inaccessible(reason: String)
}

extension Defaults.FileStore {
	var path: String { url.path(percentEncoded: false) }
	private var folderPath: String { url.deletingLastPathComponent().path(percentEncoded: false) }
	private var fileName: String { url.lastPathComponent }
	private var lockPath: String { folderPath + "/." + fileName + ".lock" }
	private var temporaryPrefix: String { "." + fileName + ".tmp-" }

	// MARK: Loading

	func load(failures: inout [Defaults.Failure]) {
		createFolderIfMissing()
		disk.withLock { disk in
			let loaded = readSettled(disk: &disk, failures: &failures)
			disk.persisted = loaded.values
			// An untouchable file keeps no identity, so every flush reads it again before it would write.
			disk.identity = loaded.identity
			memory.withLock { $0.values = loaded.values }
		}
	}

	/// Reads the file; a file that does not parse is checked again under the lock and moved aside if it is corrupt.
	private func readSettled(disk: inout DiskState, failures: inout [Defaults.Failure]) -> FileRead {
		let contents = Self.readFile(atPath: path)
		guard case .unreadable = contents else {
			return take(contents, failures: &failures)
		}
		guard lockFile(disk: &disk, failures: &failures) else {
			return .untouchable
		}
		defer { unlockFile(disk: disk) }
		return readUnderLock(failures: &failures)
	}

	/// Reads the file while holding the cross-process lock, so that no store of this package renames it meanwhile.
	///
	/// A file that does not parse may be in the middle of a rewrite in place by a writer that does not take the lock
	/// (Foundation's `UserDefaults` does that); it is read again until it stops changing before it is judged.
	private func readUnderLock(failures: inout [Defaults.Failure]) -> FileRead {
		var contents = Self.readFile(atPath: path)
		for _ in 0..<3 {
			guard case .unreadable(_, let identity, _) = contents else {
				break
			}
			usleep(50_000)
			let settled = FileIdentity.ofFile(atPath: path)
			if settled == identity {
				break
			}
			contents = Self.readFile(atPath: path)
		}
		return take(contents, failures: &failures)
	}

	/// What the store takes from `contents`; a corrupt file is moved aside, so this is for the lock holder only
	/// when `contents` is `.unreadable`.
	private func take(_ contents: FileContents, failures: inout [Defaults.Failure]) -> FileRead {
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

	/// Renames a corrupt file, which keeps its bytes exactly, so that nothing written later can overwrite them.
	///
	/// - Returns: the failure to report, and whether the file was moved.
	private func moveAside(reason: String) -> (Defaults.Failure, isMoved: Bool) {
		let formatter = DateFormatter()
		formatter.locale = Locale(identifier: "en_US_POSIX")
		formatter.timeZone = TimeZone(identifier: "UTC")
		formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
		let base = path + ".corrupt-" + formatter.string(from: Date())
		var destination = base
		var attempt = 1
		while access(destination, F_OK) == 0 {
			attempt += 1
			destination = base + "-\(attempt)"
		}
		guard rename(path, destination) == 0 else {
			let error = String(cString: strerror(errno))
			let failure = storageFailure(
				"The file \(path) is corrupt (\(reason)) and could not be moved aside (\(error)); "
					+ "the store starts empty and will not write over it until it is moved or fixed.")
			return (failure, false)
		}
		let failure = storageFailure(
			"The file \(path) is corrupt (\(reason)). It was moved to \(destination) with its bytes "
				+ "intact, and the store starts empty.")
		return (failure, true)
	}

	static func readFile(atPath path: String) -> FileContents {
		// Non-blocking: opening a FIFO for reading would otherwise wait forever for a writer.
		let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
		guard descriptor >= 0 else {
			return errno == ENOENT ? .missing : .inaccessible(reason: String(cString: strerror(errno)))
		}
		let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
		var status = stat()
		guard fstat(descriptor, &status) == 0 else {
			return .inaccessible(reason: String(cString: strerror(errno)))
		}
		guard status.st_mode & S_IFMT == S_IFREG else {
			return .inaccessible(reason: "it is not a regular file (\(FileOwnership.kind(of: status)))")
		}
		let identity = FileIdentity(status)
		let data: Data
		do {
			data = try handle.readToEnd() ?? Data()
		} catch {
			return .inaccessible(reason: "\(error)")
		}
		if data.isEmpty {
			// Foundation truncates before it rewrites; an empty file holds nothing to keep. A file that stays empty
			// is treated as empty; `readUnderLock` waits for one that is being rewritten.
			return .unreadable(data, identity, reason: "the file is empty")
		}
		do {
			return .values(try PropertyListFile.decode(data), identity)
		} catch {
			return .unreadable(data, identity, reason: error.description)
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
			defer { memory.dirtyKeys.removeAll(keepingCapacity: true) }
			return memory.dirtyKeys.map { key in (key: key, value: memory.values[key]) }
		}
		guard !changes.isEmpty else {
			return (true, reloadLocked(disk: &disk, failures: &failures))
		}
		createFolderIfMissing()
		guard lockFile(disk: &disk, failures: &failures) else {
			restoreDirtyKeys(changes)
			return (false, [])
		}
		defer { unlockFile(disk: disk) }
		removeStaleTemporaryFiles(disk: &disk)

		var externallyChanged: Set<String> = []
		var isReread = false
		var values = disk.persisted
		let currentIdentity = FileIdentity.ofFile(atPath: path)
		if currentIdentity != disk.identity {
			let reread = readUnderLock(failures: &failures)
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
			disk.identity = try writeAtomically(values)
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
			memory.dirtyKeys.formUnion(changes.lazy.map(\.key))
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
		guard FileIdentity.ofFile(atPath: path) != disk.identity else {
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

	private func createFolderIfMissing() {
		// Private like Foundation's: settings are nobody else's business.
		try? FileManager.default.createDirectory(
			atPath: folderPath, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
	}

	/// Takes the cross-process lock, a `flock` on a sibling file: the data file itself is replaced at every write.
	///
	/// The wait is bounded: a writer that is stopped or hung must not hang this process's flush or its exit. On
	/// timeout the caller keeps its changes in memory and tries again later.
	private func lockFile(disk: inout DiskState, failures: inout [Defaults.Failure]) -> Bool {
		if disk.lockDescriptor < 0 {
			// No `O_NOFOLLOW`-less open: a link planted at the lock path must not make us create a file elsewhere.
			disk.lockDescriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
			guard disk.lockDescriptor >= 0 else {
				let reason = errno == ELOOP ? "it is a symbolic link" : String(cString: strerror(errno))
				failures.append(storageFailure("The lock file \(lockPath) could not be opened: \(reason)."))
				return false
			}
			FileOwnership.giveToOwnerOfFolder(descriptor: disk.lockDescriptor, folderPath: folderPath)
		}
		let deadline = ContinuousClock.now + Self.lockWaitLimit
		while flock(disk.lockDescriptor, LOCK_EX | LOCK_NB) != 0 {
			guard errno == EWOULDBLOCK || errno == EINTR else {
				failures.append(
					storageFailure(
						"The lock file \(lockPath) could not be locked: \(String(cString: strerror(errno)))."))
				return false
			}
			guard ContinuousClock.now < deadline else {
				failures.append(
					storageFailure(
						"The file \(path) stayed locked by another process for \(Self.lockWaitLimit); the changes stay in "
							+ "memory and are written at the next try."))
				return false
			}
			usleep(10_000)
		}
		return true
	}

	private func unlockFile(disk: DiskState) {
		_ = flock(disk.lockDescriptor, LOCK_UN)
	}

	/// Removes temporary files left by writers that were killed: while the lock is held, no writer has one open.
	private func removeStaleTemporaryFiles(disk: inout DiskState) {
		guard !disk.hasRemovedStaleTemporaryFiles else {
			return
		}
		disk.hasRemovedStaleTemporaryFiles = true
		let names = (try? FileManager.default.contentsOfDirectory(atPath: folderPath)) ?? []
		for name in names where name.hasPrefix(temporaryPrefix) {
			unlink(folderPath + "/" + name)
		}
	}

	private struct WriteError: Error, CustomStringConvertible {
		let description: String

		static func posix(_ operation: String, _ path: String) -> WriteError {
			WriteError(description: "\(operation) \(path): \(String(cString: strerror(errno)))")
		}
	}

	/// Writes `values` to a temporary file in the same folder, syncs it and renames it over the file, so that
	/// readers see the old file or the new one, whole, whatever happens to this process.
	///
	/// - Returns: the identity of the new file.
	private func writeAtomically(_ values: [String: Any]) throws -> FileIdentity {
		let data = try BinaryPropertyList.encode(values)
		var existing = stat()
		let mode = stat(path, &existing) == 0 ? mode_t(existing.st_mode) & 0o777 : 0o600
		let temporaryPath = folderPath + "/" + temporaryPrefix + "\(getpid())-\(UInt32.random(in: .min ... .max))"
		let descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
		guard descriptor >= 0 else {
			throw WriteError.posix("create", temporaryPath)
		}
		var isRenamed = false
		defer {
			if !isRenamed {
				unlink(temporaryPath)
			}
		}
		do {
			defer { close(descriptor) }
			// The umask must not widen or narrow an existing file's permissions.
			fchmod(descriptor, mode)
			// A write as root (`sudo app`) must not take the file from its owner.
			FileOwnership.keep(descriptor: descriptor, ownerOf: path, orFolder: folderPath)
			guard writeAll(data, to: descriptor) else {
				throw WriteError.posix("write", temporaryPath)
			}
			guard fsync(descriptor) == 0 else {
				throw WriteError.posix("sync", temporaryPath)
			}
			var status = stat()
			guard fstat(descriptor, &status) == 0 else {
				throw WriteError.posix("stat", temporaryPath)
			}
			guard rename(temporaryPath, path) == 0 else {
				throw WriteError.posix("rename to", path)
			}
			isRenamed = true
			syncFolder()
			return FileIdentity(status)
		}
	}

	/// Makes the rename itself durable.
	private func syncFolder() {
		let descriptor = open(folderPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		guard descriptor >= 0 else {
			return
		}
		fsync(descriptor)
		close(descriptor)
	}
}

/// Writes every byte of `data`; `false` with `errno` set if the system refuses.
private func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
	data.withUnsafeBytes { buffer in
		var offset = 0
		while offset < buffer.count {
			let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
			if written < 0 {
				if errno == EINTR {
					continue
				}
				return false
			}
			offset += written
		}
		return true
	}
}
