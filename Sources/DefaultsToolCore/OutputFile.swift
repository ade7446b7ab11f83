import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// A file `export` or `snapshot` writes: replaced atomically like a settings file, and only if it is one.
///
/// - A destination that exists and is not a regular file (a device such as `/dev/full`, a FIFO, a socket, a folder)
///   is refused: replacing it with a regular file would destroy it, and writing into it is not what was asked.
/// - A symbolic link (a chain of them) is kept: the file is replaced where the link points, as the file store does.
///   Run as root, a link is followed only if it belongs to root or to the owner of the folder it is in (the
///   kernel's `fs.protected_symlinks` rule), so a user cannot steer root's write to a file elsewhere.
/// - A new file is mode 0600, like a settings file; a file that exists keeps its mode and, as root, its owner. As
///   root a new file belongs to the owner of its folder.
enum OutputFile {
	/// Writes `data` to `path`, or throws a ``ToolError`` with ``ExitStatus/cannotCreate`` and nothing changed.
	static func write(_ data: Data, to path: String) throws(ToolError) {
		let target = try resolve(path)
		try replace(target.path, with: data, existing: target.existing)
	}

	/// The file a write to `path` replaces, links followed, and its status when it exists.
	private static func resolve(_ path: String) throws(ToolError) -> (path: String, existing: stat?) {
		var current = URL(filePath: path, directoryHint: .notDirectory).absoluteURL.standardizedFileURL
		// The system's own limit on links in a row: a loop ends.
		for _ in 0..<40 {
			let currentPath = current.path(percentEncoded: false)
			var status = stat()
			guard lstat(currentPath, &status) == 0 else {
				guard errno == ENOENT else {
					throw failure(path, String(cString: strerror(errno)))
				}
				return (currentPath, nil)
			}
			switch status.st_mode & S_IFMT {
			case S_IFREG:
				return (currentPath, status)
			case S_IFLNK:
				let folder = current.deletingLastPathComponent()
				if geteuid() == 0 {
					var folderStatus = stat()
					let folderOwner =
						stat(folder.path(percentEncoded: false), &folderStatus) == 0 ? folderStatus.st_uid : 0
					guard status.st_uid == geteuid() || status.st_uid == folderOwner else {
						throw failure(
							path,
							"it is a symbolic link (\(currentPath)) that belongs neither to root nor to the owner of its "
								+ "folder, and root does not follow such a link")
					}
				}
				guard let target = linkTarget(currentPath) else {
					throw failure(path, "the link \(currentPath) cannot be read")
				}
				current =
					target.hasPrefix("/")
					? URL(filePath: target, directoryHint: .notDirectory)
					: folder.appending(path: target, directoryHint: .notDirectory).standardizedFileURL
			default:
				throw failure(
					path, "\(currentPath) is \(kind(of: status.st_mode)), not a regular file; it was left as it is")
			}
		}
		throw failure(path, "it is a chain of more than 40 symbolic links, or a loop")
	}

	/// Writes `data` to a new file beside `path` and renames it over `path`.
	private static func replace(_ path: String, with data: Data, existing: stat?) throws(ToolError) {
		let url = URL(filePath: path, directoryHint: .notDirectory)
		let folder = url.deletingLastPathComponent().path(percentEncoded: false)
		let temporary =
			url.deletingLastPathComponent().appending(
				path: ".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: .min ... .max))"
			).path(percentEncoded: false)
		let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
		guard descriptor >= 0 else {
			throw failure(path, String(cString: strerror(errno)))
		}
		var problem: String?
		data.withUnsafeBytes { buffer in
			var offset = 0
			while offset < buffer.count, problem == nil {
				let count = Foundation.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
				if count < 0, errno != EINTR {
					problem = String(cString: strerror(errno))
				}
				offset += max(count, 0)
			}
		}
		if problem == nil, let existing {
			_ = fchmod(descriptor, existing.st_mode & 0o7777)
			if geteuid() == 0 {
				_ = fchown(descriptor, existing.st_uid, existing.st_gid)
			}
		} else if problem == nil, geteuid() == 0 {
			var folderStatus = stat()
			if stat(folder, &folderStatus) == 0 {
				_ = fchown(descriptor, folderStatus.st_uid, folderStatus.st_gid)
			}
		}
		if problem == nil, fsync(descriptor) != 0 {
			problem = String(cString: strerror(errno))
		}
		close(descriptor)
		if problem == nil, rename(temporary, path) != 0 {
			problem = String(cString: strerror(errno))
		}
		if let problem {
			unlink(temporary)
			throw failure(path, problem)
		}
	}

	private static func linkTarget(_ path: String) -> String? {
		var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
		let count = readlink(path, &buffer, buffer.count - 1)
		guard count > 0 else {
			return nil
		}
		return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
	}

	private static func kind(of mode: mode_t) -> String {
		switch mode & S_IFMT {
		case S_IFCHR: "a character device"
		case S_IFBLK: "a block device"
		case S_IFIFO: "a FIFO"
		case S_IFSOCK: "a socket"
		case S_IFDIR: "a folder"
		default: "not a regular file"
		}
	}

	private static func failure(_ path: String, _ reason: String) -> ToolError {
		ToolError("\(path) cannot be written: \(reason).", status: .cannotCreate)
	}
}
