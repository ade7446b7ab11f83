import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// Which version of a file a store last read or wrote.
enum FileVersion: Sendable {
	/// There was no file.
	case missing
	case present(FileIdentity)
	/// A file may be there, but it was not read (it could not be, or its `stat` failed): it matches nothing, so the
	/// store reads the file again before it would ever write over it.
	case unknown

	/// Whether both name the same known version of the file; ``unknown`` is the same as nothing.
	func isSame(as other: FileVersion) -> Bool {
		switch (self, other) {
		case (.missing, .missing): true
		case (.present(let identity), .present(let otherIdentity)): identity == otherIdentity
		default: false
		}
	}
}

/// Tells one version of a file from another without reading it: a rename brings a new inode, a rewrite in place a
/// new modification time or size.
///
/// Not the change time: renaming a file changes it, so the identity a writer takes of its temporary file before the
/// rename would never match the file after it, and every flush would read back its own write.
package struct FileIdentity: Equatable, Sendable {
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
	package static func ofFile(atPath path: String) -> FileIdentity? {
		var status = stat()
		guard stat(path, &status) == 0 else {
			return nil
		}
		return FileIdentity(status)
	}

	/// The file's size in bytes.
	package var byteCount: Int64 { size }

	/// The last modification, in seconds since 1970.
	package var modificationTime: Double {
		Double(modificationSeconds) + Double(modificationNanoseconds) / 1e9
	}
}
