import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// The folder every operation on a settings file works in, opened so that no link swapped in can redirect it.
///
/// When root works on a file other users could steer (the file has guardians, see `ResolvedSettingsPath`), the
/// checks of `SettingsFile.refusal(for:)` look at paths, and a guardian could replace a folder on the way by a link
/// right after them. So root opens the folder from `/` one component at a time, following no link, and reads,
/// locks, creates, renames and removes by name inside that open folder (`openat`, `renameat`, `unlinkat`): what it
/// changes is in the folder it checked, or nowhere. Anyone else works with plain paths, as the kernel already
/// limits them to what their user may do.
struct FolderAnchor {
	/// The open folder, or `AT_FDCWD` for plain paths.
	let descriptor: Int32
	/// What goes before a file name of the folder: the folder's path and `/`, or nothing inside an open folder.
	private let prefix: String

	/// How to reach the file named `name` in the folder.
	func name(_ name: String) -> String {
		prefix + name
	}

	/// The folder of `file`, or why it cannot be opened safely (a folder on the way is a link now, or missing).
	static func opened(for file: SettingsFile) -> (anchor: FolderAnchor?, refusal: String?) {
		guard !file.resolution.guardians.isEmpty else {
			return (FolderAnchor(descriptor: AT_FDCWD, prefix: file.folderPath + "/"), nil)
		}
		let (descriptor, refusal) = openFolder(file.folderPath, followingLinks: false)
		return descriptor >= 0 ? (FolderAnchor(descriptor: descriptor, prefix: ""), nil) : (nil, refusal)
	}

	/// Opens the folder at `path`; without following links, one component at a time from `/`, unless
	/// `followingLinks`. Returns the descriptor, or -1 and why not.
	static func openFolder(_ path: String, followingLinks: Bool) -> (descriptor: Int32, refusal: String?) {
		if followingLinks {
			let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
			return descriptor >= 0
				? (descriptor, nil)
				: (-1, "The folder \(path) could not be opened: \(String(cString: strerror(errno))).")
		}
		var descriptor = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		var reached = ""
		for component in path.split(separator: "/").map(String.init) {
			guard descriptor >= 0 else {
				break
			}
			let next = openat(descriptor, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			let reason = errno
			close(descriptor)
			descriptor = next
			reached += "/" + component
			if next < 0 {
				errno = reason
			}
		}
		guard descriptor >= 0 else {
			let why =
				errno == ELOOP || errno == ENOTDIR ? "it is a symbolic link now" : String(cString: strerror(errno))
			return (-1, "The folder \(reached) was not opened, since root opens it without following links: \(why).")
		}
		return (descriptor, nil)
	}

	/// Closes the folder, if it was opened.
	func release() {
		if descriptor != AT_FDCWD {
			close(descriptor)
		}
	}

	/// Flags that keep the last component from being a link, inside an open folder.
	var noFollow: Int32 {
		descriptor == AT_FDCWD ? 0 : O_NOFOLLOW
	}
}
