import Defaults
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
/// - A symbolic link (a chain of them, in the last component or a folder on the way) is kept: the file is replaced
///   where the link points, resolved and guarded exactly as the file store resolves a settings file. Run as root, a
///   link is followed only if it belongs to root or to the owner of the folder it is in (the kernel's
///   `fs.protected_symlinks` rule), and the file is then written only where every user who owns a link followed or
///   a folder on the way could write it, in its folder opened without following links: a user's link to
///   `/etc/shadow` is refused.
/// - A new file is mode 0600, like a settings file; a file that exists keeps its permissions (never setuid or
///   setgid) and, as root, its owner. As root a new file belongs to the owner of its folder.
enum OutputFile {
	/// Writes `data` to `path`, or throws a ``ToolError`` with ``ExitStatus/cannotCreate`` and nothing changed.
	static func write(_ data: Data, to path: String) throws(ToolError) {
		let file = SettingsFile(url: URL(filePath: path, directoryHint: .notDirectory))
		if let refusal = file.refusal(for: .change) {
			let leads = file.path == path ? "" : "it leads to \(file.path), which is left alone: "
			throw failure(path, leads + refusal)
		}
		var status = stat()
		if lstat(file.path, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
			throw failure(
				path, "\(file.path) is \(FileOwnership.kind(of: status)), not a regular file; it was left as it is")
		}
		do {
			_ = try file.replace(withBytes: data)
		} catch {
			throw failure(path, "\(error)")
		}
	}

	private static func failure(_ path: String, _ reason: String) -> ToolError {
		ToolError("\(path) cannot be written: \(reason).", status: .cannotCreate)
	}
}
