import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// Everything about one property-list settings file on disk: reading it safely, telling its versions apart, the
/// cross-process lock, atomic replacement, moving a corrupt file aside.
///
/// The file store and the `defaults` command both use it, so a file is read, judged and written one way only. It
/// holds no state but where the file is: the store keeps what it knows of the file (the identity it last read)
/// under its own locks.
package struct SettingsFile: Sendable {
	/// The file's path, with every link resolved (see ``ResolvedSettingsPath``).
	package let path: String
	/// The absolute path as it was named, before links were resolved: for messages.
	let namedPath: String
	/// What resolving the links found, and what root may do to the file.
	let resolution: ResolvedSettingsPath

	/// The file at `url`, its links resolved: a settings file that is a link (dotfiles kept in a repository and
	/// linked into `~/.config`) is read, locked, watched and atomically replaced where the link points, so the link
	/// stays a link and every process that reaches the file, through the link or not, shares one lock.
	package init(url: URL) {
		namedPath = url.absoluteURL.path(percentEncoded: false)
		resolution = ResolvedSettingsPath(resolving: namedPath)
		path = resolution.path
	}

	/// A file with its own name in the folder `resolution` resolved to: ``init(besideFileAt:)``.
	private init(folderResolution resolution: ResolvedSettingsPath, name: String) {
		var resolution = resolution
		resolution.path = (resolution.path == "/" ? "" : resolution.path) + "/" + name
		self.resolution = resolution
		path = resolution.path
		namedPath = path
	}

	/// The file at `url`, a file kept beside a settings file: its folder's links are resolved as a settings file's
	/// are, a link at its own name is never followed.
	package init(besideFileAt url: URL) {
		let absolute = url.absoluteURL
		self.init(
			folderResolution: ResolvedSettingsPath(
				resolving: absolute.deletingLastPathComponent().path(percentEncoded: false)),
			name: absolute.lastPathComponent)
	}

	/// The most a settings file may hold: 64 MiB, 16 times the 4 MiB Apple's own defaults refuse to store per
	/// domain, and thousands of times any real settings file. A larger file (or one that keeps growing, or a link to
	/// `/proc/self/pagemap`) is never read whole, and the store never writes one.
	package static let maximumByteCount = 64 << 20

	var folderPath: String { (path as NSString).deletingLastPathComponent }
	var fileName: String { (path as NSString).lastPathComponent }
	/// The file's name as it was named, a link's rather than its target's.
	var namedFileName: String { (namedPath as NSString).lastPathComponent }
	/// A sibling, not the file itself: the file is replaced at every write, which would drop a lock held on it.
	var lockPath: String { folderPath + "/" + lockName }
	var lockName: String { "." + fileName + ".lock" }
	private var temporaryPrefix: String { "." + fileName + ".tmp-" }

	/// The file's contents at one moment.
	package enum Contents {
		case missing
		case values([String: Any], FileIdentity)
		/// Bytes that are not a property list holding a dictionary (an empty file among them), with the reason.
		case unreadable(Data, FileIdentity, reason: String)
		/// The file exists but could not be opened or read (permissions, an I/O error, not a regular file).
		case inaccessible(reason: String)
	}

	// MARK: Reading

	/// Reads and decodes the file once, without blocking on a FIFO and without following it anywhere a regular file
	/// is not.
	package func read() -> Contents {
		if let reason = refusal(for: .read) {
			return .inaccessible(reason: reason)
		}
		let (anchor, anchorRefusal) = FolderAnchor.opened(for: self)
		guard let anchor else {
			return .inaccessible(reason: anchorRefusal ?? "")
		}
		// Non-blocking: opening a FIFO for reading would otherwise wait forever for a writer.
		let descriptor = movedAboveStandardStreams(
			openat(anchor.descriptor, anchor.name(fileName), O_RDONLY | O_CLOEXEC | O_NONBLOCK | anchor.noFollow))
		defer { anchor.release() }
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
		if let reason = FileOwnership.plantedReason(status, in: anchor) {
			return .inaccessible(reason: reason)
		}
		let identity = FileIdentity(status)
		let isTooLarge = status.st_size > Self.maximumByteCount
		// A file whose size says it is too large is sampled; one that only turns out to be (a file still growing,
		// a kernel file whose size reads 0) is read just past the limit (at most 64 KiB past), never further.
		let bounded = readBounded(
			from: handle.fileDescriptor, atMost: isTooLarge ? 65_536 : Self.maximumByteCount + 1)
		if let failure = bounded.failure {
			return .inaccessible(reason: failure)
		}
		let data = bounded.data
		if isTooLarge || data.count > Self.maximumByteCount {
			return .unreadable(
				data, identity,
				reason: "it holds more than \(Self.maximumByteCount >> 20) MiB, the most a settings file may hold")
		}
		if data.isEmpty {
			// Foundation truncates before it rewrites; an empty file holds nothing to keep. Whoever reads decides
			// whether an empty file is an empty store or a file being rewritten (see `readSettled`).
			return .unreadable(data, identity, reason: "the file is empty")
		}
		do {
			return .values(try PropertyListFile.decode(data), identity)
		} catch {
			return .unreadable(data, identity, reason: error.description)
		}
	}

	/// Reads the file, and reads a file that does not parse again until it stops changing, before it is judged.
	///
	/// Foundation's `UserDefaults` takes no lock and rewrites its file in place, so a file that does not parse may
	/// be half written; it counts as corrupt only once it reads the same over 150 ms.
	package func readSettled() -> Contents {
		var contents = read()
		for _ in 0..<3 {
			guard case .unreadable(_, let identity, _) = contents else {
				break
			}
			usleep(50_000)
			if FileIdentity.ofFile(atPath: path) == identity {
				break
			}
			contents = read()
		}
		return contents
	}

	/// The identity of the file as it is now, or `nil` when there is none.
	package var identity: FileIdentity? {
		FileIdentity.ofFile(atPath: path)
	}

	/// Which version of the file is there now; a file whose `stat` fails for any reason but its absence is
	/// ``FileVersion/unknown``, which matches no version read before.
	var version: FileVersion {
		var status = stat()
		if stat(path, &status) == 0 {
			return .present(FileIdentity(status))
		}
		return errno == ENOENT ? .missing : .unknown
	}

	// MARK: Corrupt files

	/// Renames a corrupt file to `<name>.corrupt-<UTC timestamp>`, which keeps its bytes exactly, so that nothing
	/// written later can overwrite them.
	///
	/// - Returns: where the file went, or the reason it could not be moved.
	func moveAside() -> Result<String, MoveError> {
		let formatter = DateFormatter()
		formatter.locale = Locale(identifier: "en_US_POSIX")
		formatter.timeZone = TimeZone(identifier: "UTC")
		formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
		let (anchor, anchorRefusal) = FolderAnchor.opened(for: self)
		guard let anchor else {
			return .failure(MoveError(reason: anchorRefusal ?? ""))
		}
		defer { anchor.release() }
		let base = fileName + ".corrupt-" + formatter.string(from: Date())
		var destination = base
		var attempt = 1
		while faccessat(anchor.descriptor, anchor.name(destination), F_OK, AT_SYMLINK_NOFOLLOW) == 0 {
			attempt += 1
			destination = base + "-\(attempt)"
		}
		guard renameat(anchor.descriptor, anchor.name(fileName), anchor.descriptor, anchor.name(destination)) == 0
		else {
			return .failure(MoveError(reason: String(cString: strerror(errno))))
		}
		return .success(folderPath + "/" + destination)
	}

	struct MoveError: Error {
		let reason: String
	}

	// MARK: Writing

	/// Creates the file's folder if it is missing, private like Foundation's (0700: settings are nobody else's
	/// business), each new folder belonging to its parent's owner so that root (`sudo app`) never takes a user's
	/// `~/.config` from them. Only writes call it: opening or reading a store creates nothing.
	///
	/// - Returns: why the folder could not be made, as a sentence; `nil` when it is there.
	func createFolderIfMissing() -> String? {
		var status = stat()
		if stat(folderPath, &status) == 0 {
			return nil
		}
		if let sentence = changeRefusal() {
			return sentence
		}
		var missing: [String] = []
		var existing = folderPath
		while stat(existing, &status) != 0, errno == ENOENT, existing != "/" {
			missing.append((existing as NSString).lastPathComponent)
			existing = (existing as NSString).deletingLastPathComponent
		}
		// Made one by one inside the folder above, opened without following links when root works for another user,
		// so that no link swapped in meanwhile can make root create a folder elsewhere.
		let opened = FolderAnchor.openFolder(existing, followingLinks: resolution.guardians.isEmpty)
		var parent = opened.descriptor
		guard parent >= 0 else {
			return opened.refusal
		}
		defer { close(parent) }
		for name in missing.reversed() {
			existing += (existing.hasSuffix("/") ? "" : "/") + name
			let isNew = mkdirat(parent, name, 0o700) == 0
			guard isNew || errno == EEXIST else {
				return "The folder \(existing) could not be created: \(String(cString: strerror(errno)))."
			}
			let descriptor = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			guard descriptor >= 0 else {
				return "The folder \(existing) could not be opened: \(String(cString: strerror(errno)))."
			}
			// The umask may have narrowed 0700 further; nothing may have widened it. A folder someone else made
			// meanwhile is theirs, and left as it is.
			if isNew {
				fchmod(descriptor, 0o700)
				FileOwnership.giveToOwnerOfFolder(descriptor: descriptor, folderDescriptor: parent)
			}
			close(parent)
			parent = descriptor
		}
		return nil
	}

	/// Removes temporary files left by writers that were killed: the settings file's, and those of sync's files
	/// beside it (`.<name>.sync.*.tmp-*`: its state and journal), which are written only under the same lock. Only
	/// while holding the lock: then no writer has one open. With `process`, only that process's, which the caller
	/// knows write no more.
	func removeStaleTemporaryFiles(ofProcess process: Int32? = nil) {
		let names = (try? FileManager.default.contentsOfDirectory(atPath: folderPath)) ?? []
		let (anchor, _) = FolderAnchor.opened(for: self)
		guard let anchor else {
			return
		}
		defer { anchor.release() }
		let besidePrefix = "." + fileName + ".sync."
		for name in names
		where name.hasPrefix(temporaryPrefix) || (name.hasPrefix(besidePrefix) && name.contains(".tmp-")) {
			if let process, !name.contains(".tmp-\(process)-") {
				continue
			}
			unlinkat(anchor.descriptor, anchor.name(name), 0)
		}
	}

	struct WriteError: Error, CustomStringConvertible {
		let description: String

		static func posix(_ operation: String, _ path: String) -> WriteError {
			WriteError(description: "\(operation) \(path): \(String(cString: strerror(errno)))")
		}
	}

	/// Writes `values` as a binary property list to a temporary file in the same folder, syncs it and renames it
	/// over the file, so that readers see the old file or the new one, whole, whatever happens to this process.
	/// The file keeps its permissions, and its owner when root writes it.
	///
	/// - Returns: the identity of the new file.
	func replace(with values: [String: Any]) throws -> FileIdentity {
		let data = try BinaryPropertyList.encode(values)
		guard data.count <= Self.maximumByteCount else {
			// A file the store could not read back would be kept aside at the next launch, its values gone.
			throw BinaryPropertyList.TooLarge(
				description: "the settings take \(data.count) bytes, more than the \(Self.maximumByteCount >> 20) MiB "
					+ "a settings file may hold")
		}
		return try replace(withBytes: data)
	}

	/// Writes `data` to a temporary file in the same folder, syncs it and renames it over the file, as
	/// ``replace(with:)`` does, in the folder opened without following links when root works for other users.
	/// Callers check ``refusal(for:)`` first.
	///
	/// - Returns: the identity of the new file.
	/// - Parameter newMode: the permissions of the new file; `nil` keeps those of the file it replaces (0600 for a
	///   new file).
	package func replace(withBytes data: Data, mode newMode: mode_t? = nil) throws -> FileIdentity {
		try replace(mode: newMode) { descriptor, temporaryPath in
			guard data.withUnsafeBytes({ writeAll($0, to: descriptor) }) else {
				throw WriteError.posix("write", temporaryPath)
			}
		}
	}

	/// Writes `snapshot` as ``replace(with:)`` writes a dictionary of the same values (the same bytes), encoding it
	/// straight into the temporary file in pieces (``BinaryPropertyList/encode(_:limit:to:)``): no buffer of the
	/// file's size is made. Values that would take more than ``maximumByteCount`` bytes leave the file unchanged.
	///
	/// - Returns: the identity of the new file.
	func replace(with snapshot: ValueSnapshot) throws -> FileIdentity {
		try replace(mode: nil) { descriptor, temporaryPath in
			try BinaryPropertyList.encode(snapshot, limit: Self.maximumByteCount) { piece in
				guard writeAll(piece, to: descriptor) else {
					throw WriteError.posix("write", temporaryPath)
				}
			}
		}
	}

	/// Makes a temporary file in the same folder, has `write` fill it (given its descriptor and path), syncs it and
	/// renames it over the file; the temporary file is removed if anything fails.
	private func replace(
		mode newMode: mode_t?, writing write: (_ descriptor: Int32, _ temporaryPath: String) throws -> Void
	) throws -> FileIdentity {
		let (openedAnchor, anchorRefusal) = FolderAnchor.opened(for: self)
		guard let anchor = openedAnchor else {
			throw WriteError(description: anchorRefusal ?? "")
		}
		defer { anchor.release() }
		// Not following a link at the file's name: its target's owner and mode are not the file's.
		var existing = stat()
		let fileIsThere =
			fstatat(anchor.descriptor, anchor.name(fileName), &existing, AT_SYMLINK_NOFOLLOW) == 0
			&& existing.st_mode & S_IFMT == S_IFREG
		// Checked again here, where the file is replaced: a file planted after the read must not lend its owner.
		if fileIsThere, let reason = FileOwnership.plantedReason(existing, in: anchor) {
			throw WriteError(description: "The file \(path) is left alone: \(reason)")
		}
		let mode = newMode ?? (fileIsThere ? mode_t(existing.st_mode) & 0o777 : 0o600)
		let temporaryName = temporaryPrefix + "\(getpid())-\(UInt32.random(in: .min ... .max))"
		let temporaryPath = folderPath + "/" + temporaryName
		let descriptor = movedAboveStandardStreams(
			openat(
				anchor.descriptor, anchor.name(temporaryName), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0o600))
		guard descriptor >= 0 else {
			throw WriteError.posix("create", temporaryPath)
		}
		var isRenamed = false
		defer {
			if !isRenamed {
				unlinkat(anchor.descriptor, anchor.name(temporaryName), 0)
			}
		}
		do {
			defer { close(descriptor) }
			// The umask must not widen or narrow an existing file's permissions.
			fchmod(descriptor, mode)
			// A write as root (`sudo app`) must not take the file from its owner.
			FileOwnership.keep(descriptor: descriptor, ownerOf: fileIsThere ? existing : nil, orFolderOf: anchor)
			try write(descriptor, temporaryPath)
			guard fsync(descriptor) == 0 else {
				throw WriteError.posix("sync", temporaryPath)
			}
			var status = stat()
			guard fstat(descriptor, &status) == 0 else {
				throw WriteError.posix("stat", temporaryPath)
			}
			guard renameat(anchor.descriptor, anchor.name(temporaryName), anchor.descriptor, anchor.name(fileName)) == 0
			else {
				throw WriteError.posix("rename to", path)
			}
			isRenamed = true
			syncFolder(anchor)
			return FileIdentity(status)
		}
	}

	// MARK: Files beside the settings file

	/// Replaces this file, one kept beside a settings file (see ``init(besideFileAt:)``), with `data`, as the settings file
	/// is replaced: a temporary file made exclusively in the folder (never through a link planted at any name),
	/// synced and renamed over it, in the folder opened without following links when root works for other users,
	/// owned as the settings file would be, refused where the settings file's changes would be.
	///
	/// - Returns: `nil` once written, else why not, as a sentence.
	package func replaceBesideFile(with data: Data, mode: mode_t = 0o600) -> String? {
		if let sentence = changeRefusal() {
			return sentence
		}
		do {
			_ = try replace(withBytes: data, mode: mode)
			return nil
		} catch {
			return "The file \(path) could not be written: \(error)."
		}
	}

	/// What reading a file kept beside a settings file found.
	package enum BesideFileContents {
		case missing
		case bytes(Data)
		/// The file is there but was not read, with the reason.
		case refused(String)
	}

	/// Reads this file, one kept beside a settings file (see ``init(besideFileAt:)``), as the settings file is read: never
	/// through a link at its name, only a regular file, and not one another user may have planted.
	package func readBesideFile() -> BesideFileContents {
		let opened = withBesideFileOpened { descriptor -> BesideFileContents in
			let bounded = readBounded(from: descriptor, atMost: Self.maximumByteCount + 1)
			if let failure = bounded.failure {
				return .refused(failure)
			}
			guard bounded.data.count <= Self.maximumByteCount else {
				return .refused("it holds more than \(Self.maximumByteCount >> 20) MiB")
			}
			return .bytes(bounded.data)
		}
		switch opened {
		case .opened(let contents): return contents
		case .missing: return .missing
		case .refused(let reason): return .refused(reason)
		}
	}

	/// What opening a file kept beside a settings file found.
	package enum BesideFileOpening<T> {
		case missing
		case opened(T)
		/// The file is there but was not opened, with the reason.
		case refused(String)
	}

	/// Opens this file, one kept beside a settings file, for reading with the checks of ``readBesideFile()``, and
	/// runs `body` with its descriptor (closed afterwards).
	package func withBesideFileOpened<T>(_ body: (_ descriptor: Int32) -> T) -> BesideFileOpening<T> {
		if let reason = refusal(for: .read) {
			return .refused(reason)
		}
		let (anchor, anchorRefusal) = FolderAnchor.opened(for: self)
		guard let anchor else {
			return .refused(anchorRefusal ?? "")
		}
		defer { anchor.release() }
		let descriptor = movedAboveStandardStreams(
			openat(anchor.descriptor, anchor.name(fileName), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW))
		guard descriptor >= 0 else {
			switch errno {
			case ENOENT: return .missing
			case ELOOP: return .refused("it is a symbolic link")
			default: return .refused(String(cString: strerror(errno)))
			}
		}
		defer { close(descriptor) }
		var status = stat()
		guard fstat(descriptor, &status) == 0 else {
			return .refused(String(cString: strerror(errno)))
		}
		guard status.st_mode & S_IFMT == S_IFREG else {
			return .refused("it is not a regular file (\(FileOwnership.kind(of: status)))")
		}
		if let reason = FileOwnership.plantedReason(status, in: anchor) {
			return .refused(reason)
		}
		return .opened(body(descriptor))
	}

	/// Makes a rename in the folder durable.
	private func syncFolder(_ anchor: FolderAnchor) {
		if anchor.descriptor != AT_FDCWD {
			fsync(anchor.descriptor)
			return
		}
		let descriptor = open(folderPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		guard descriptor >= 0 else {
			return
		}
		fsync(descriptor)
		close(descriptor)
	}
}

/// Reads `descriptor` until its end or until `limit` bytes or more are in, whole 64 KiB reads at a time (kernel files
/// such as `/proc/self/pagemap` refuse reads of odd sizes); the reason when the system refuses.
private func readBounded(from descriptor: Int32, atMost limit: Int) -> (data: Data, failure: String?) {
	var data = Data()
	var chunk = [UInt8](repeating: 0, count: 1 << 16)
	while data.count < limit {
		let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
		if count < 0 {
			if errno == EINTR {
				continue
			}
			return (data, String(cString: strerror(errno)))
		}
		if count == 0 {
			break
		}
		data.append(contentsOf: chunk[..<count])
	}
	return (data, nil)
}
