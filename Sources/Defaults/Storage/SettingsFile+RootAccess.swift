import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// What a process running as root does to a settings file that other users could steer (see
/// `ResolvedSettingsPath`): only what each of those users could do with their own permissions.
///
/// Checked before every read and before every change (taking the lock, which comes before creating, replacing or
/// moving a file aside; creating a folder), so that a link or folder swapped in after the store opened is caught
/// at the next operation.
extension SettingsFile {
	package enum RootAccess {
		/// Reading the file.
		case read
		/// Creating files beside it (the lock, a temporary file, a folder), replacing it, moving it aside.
		case change
	}

	/// Why the store must not do `access` to the file, as a clause to follow "the file is left alone:"; `nil` when
	/// it may. A path whose links could not be resolved is refused to everyone; the guardians' rights bind only root.
	package func refusal(for access: RootAccess) -> String? {
		if let refusal = resolution.refusal {
			return refusal
		}
		for user in resolution.guardians {
			if let reason = Self.reasonUserCannot(access, path: path, user: user) {
				let reached = namedPath == path ? "" : "it is reached from \(namedPath), and "
				return reached
					+ "\(describeUser(user)), who could have placed it there, \(reason); a process running as root "
					+ "does to a user's settings only what that user could do"
			}
		}
		return nil
	}

	/// The sentence for a change ``refusal(for:)`` refuses.
	func changeRefusal() -> String? {
		refusal(for: .change).map { "The file \(path) is left alone: \($0)." }
	}

	/// Why `user` could not do `access` to the file at `path`; `nil` when they could.
	private static func reasonUserCannot(_ access: RootAccess, path: String, user: uid_t) -> String? {
		let groups = groups(of: user)
		var folder = ""
		var deepestExisting = stat()
		guard stat("/", &deepestExisting) == 0 else {
			return "cannot reach /"
		}
		let folderComponents = path.split(separator: "/").dropLast()
		for component in folderComponents {
			guard permits(deepestExisting, user: user, groups: groups, read: false, write: false, search: true) else {
				return "cannot enter \(folder.isEmpty ? "/" : folder)"
			}
			let next = folder + "/" + component
			var status = stat()
			guard lstat(next, &status) == 0 else {
				// The rest is missing: creating it needs the right to write in the deepest folder there is.
				return access == .change
					&& !permits(deepestExisting, user: user, groups: groups, read: false, write: true, search: true)
					? "cannot create \(next)" : nil
			}
			guard status.st_mode & S_IFMT == S_IFDIR else {
				return "finds \(next) is no longer a folder (it was replaced since the store opened the file)"
			}
			folder = next
			deepestExisting = status
		}
		guard permits(deepestExisting, user: user, groups: groups, read: false, write: false, search: true) else {
			return "cannot enter \(folder)"
		}
		var file = stat()
		let fileExists = lstat(path, &file) == 0
		switch access {
		case .read:
			if fileExists, !permits(file, user: user, groups: groups, read: true, write: false, search: false) {
				return "cannot read it"
			}
		case .change:
			guard permits(deepestExisting, user: user, groups: groups, read: false, write: true, search: true) else {
				return "cannot create, replace or rename files in \(folder)"
			}
			// In a sticky folder (`/tmp`) only a file's owner or the folder's may rename or replace it.
			if fileExists, deepestExisting.st_mode & S_ISVTX != 0, file.st_uid != user, deepestExisting.st_uid != user {
				return "cannot replace it in the sticky folder \(folder)"
			}
		}
		return nil
	}

	private static func permits(
		_ status: stat, user: uid_t, groups: [gid_t], read: Bool, write: Bool, search: Bool
	) -> Bool {
		let mode = UInt32(status.st_mode)
		let bits: UInt32 =
			if status.st_uid == user {
				(mode >> 6) & 7
			} else if groups.contains(status.st_gid) {
				(mode >> 3) & 7
			} else {
				mode & 7
			}
		let wanted: UInt32 = (read ? 4 : 0) | (write ? 2 : 0) | (search ? 1 : 0)
		return bits & wanted == wanted
	}

	/// The groups `user` is in, as the system would give them at login; none known for a user without an entry.
	private static func groups(of user: uid_t) -> [gid_t] {
		var entry = passwd()
		var result: UnsafeMutablePointer<passwd>?
		var buffer = [CChar](repeating: 0, count: 16_384)
		guard getpwuid_r(user, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name
		else {
			return []
		}
		var count: Int32 = 64
		var groups = [gid_t](repeating: 0, count: Int(count))
		if getgrouplist(name, entry.pw_gid, &groups, &count) < 0 {
			groups = [gid_t](repeating: 0, count: Int(count))
			guard getgrouplist(name, entry.pw_gid, &groups, &count) >= 0 else {
				return [entry.pw_gid]
			}
		}
		return Array(groups.prefix(Int(count)))
	}
}

/// A user for messages: `user alice (1001)`, or `user 1001` when the system has no name for it.
func describeUser(_ user: uid_t) -> String {
	var entry = passwd()
	var result: UnsafeMutablePointer<passwd>?
	var buffer = [CChar](repeating: 0, count: 16_384)
	guard getpwuid_r(user, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else {
		return "user \(user)"
	}
	return "user \(String(cString: name)) (\(user))"
}
