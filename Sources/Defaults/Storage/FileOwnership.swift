import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// Keeps settings files with the user they belong to when a process running as root writes them.
///
/// After `sudo app` or `sudo defaults write` with the user's `HOME`, a file replaced by root would be root's, mode
/// 0600: the user's own app could then neither read nor write its settings. Only root can give a file away, so for
/// anyone else this does nothing.
package enum FileOwnership {
	/// Gives the open file `descriptor` the owner and group of the file `existing` describes, or of the folder of
	/// `anchor` when there is no file yet. Taken from what was read without following links, never from a path a
	/// link at the file's name could redirect.
	static func keep(descriptor: Int32, ownerOf existing: stat?, orFolderOf anchor: FolderAnchor) {
		guard geteuid() == 0 else {
			return
		}
		if let existing {
			give(descriptor: descriptor, to: existing)
			return
		}
		var folder = stat()
		if fstatat(anchor.descriptor, anchor.name("."), &folder, 0) == 0 {
			give(descriptor: descriptor, to: folder)
		}
	}

	/// Gives the open file `descriptor` the owner and group of the open folder `folderDescriptor`.
	static func giveToOwnerOfFolder(descriptor: Int32, folderDescriptor: Int32) {
		guard geteuid() == 0 else {
			return
		}
		var folder = stat()
		guard fstat(folderDescriptor, &folder) == 0 else {
			return
		}
		give(descriptor: descriptor, to: folder)
	}

	private static func give(descriptor: Int32, to owner: stat) {
		var current = stat()
		guard fstat(descriptor, &current) == 0, current.st_uid != owner.st_uid || current.st_gid != owner.st_gid else {
			return
		}
		_ = fchown(descriptor, owner.st_uid, owner.st_gid)
	}

	/// Why the file `status` describes, found in the folder of `anchor`, may have been put there by another user, as
	/// a clause; `nil` when it may be read and written.
	///
	/// A file belongs to whoever made it. One that belongs to neither the folder's owner, nor root, nor this
	/// process's user, in a folder that lets others than its owner create files (group or other write), was made by
	/// one of those others: read, it would give the process their values; replaced by root, the user's settings
	/// would go into a file that user owns and reads. The folder's owner could not have made it, so root, who does
	/// only what the folder's guardians could do, does not write it either.
	static func plantedReason(_ status: stat, in anchor: FolderAnchor) -> String? {
		var folder = stat()
		guard fstatat(anchor.descriptor, anchor.name("."), &folder, 0) == 0 else {
			return nil
		}
		guard ![folder.st_uid, 0, geteuid()].contains(status.st_uid), folder.st_mode & (S_IWGRP | S_IWOTH) != 0 else {
			return nil
		}
		return "it belongs to \(describeUser(status.st_uid)), in a folder of \(describeUser(folder.st_uid)) that "
			+ "others may write in, so that user may have put it there; it is neither read nor written until its "
			+ "owner is the folder's"
	}

	/// What kind of file `status` describes, for messages.
	package static func kind(of status: stat) -> String {
		switch status.st_mode & S_IFMT {
		case S_IFIFO: "a FIFO"
		case S_IFDIR: "a folder"
		case S_IFSOCK: "a socket"
		case S_IFCHR: "a character device"
		case S_IFBLK: "a block device"
		case S_IFLNK: "a symbolic link"
		default: "not a regular file"
		}
	}
}
