import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// How a settings path is resolved to the file behind it, link by link, and which links a process running as root
/// refuses to follow.
///
/// The rule for root follows the kernel's `fs.protected_symlinks`: a link is followed only if it belongs to root or
/// to the owner of the folder that holds it. Every other user who owns a link followed or a folder on the way is a
/// *guardian* of the file: that user could have put anything there, so root then does to the file only what every
/// guardian could do themselves (see `SettingsFile.refusal(for:)`).
struct ResolvedSettingsPath: Equatable {
	/// The absolute path with every link resolved, or as far as it could be resolved.
	var path: String
	/// Users other than root who own a link followed or a folder on the way; empty unless running as root.
	var guardians: [uid_t] = []
	/// Why the file must not be touched at all, as a sentence; `nil` when it may be.
	var refusal: String?

	/// The kernel's own limit on links in one path (`ELOOP` past it).
	static let linkLimit = 40

	/// Resolves `absolutePath` as the kernel would, one component at a time: `..` after a link leaves the link's
	/// target, not the link. Components from the first missing one on are kept as they are written.
	init(resolving absolutePath: String, isPrivileged: Bool = geteuid() == 0) {
		path = absolutePath
		var pending = Array(Self.components(of: absolutePath).reversed())
		var resolved: [String] = []
		var linkCount = 0
		var isMissing = false
		var guardians: Set<uid_t> = []
		while let component = pending.popLast() {
			if component == "." {
				continue
			}
			if component == ".." {
				_ = resolved.popLast()
				continue
			}
			let candidate = Self.join(resolved + [component])
			var status = stat()
			if isMissing || lstat(candidate, &status) != 0 {
				isMissing = true
				resolved.append(component)
				continue
			}
			let kind = status.st_mode & S_IFMT
			guard kind == S_IFLNK else {
				if isPrivileged, kind == S_IFDIR, status.st_uid != 0 {
					guardians.insert(status.st_uid)
				}
				resolved.append(component)
				continue
			}
			linkCount += 1
			guard linkCount <= Self.linkLimit else {
				refusal =
					"it is reached through more than \(Self.linkLimit) symbolic links (a loop, or a longer chain than "
					+ "the system follows), so it is neither read nor written"
				return
			}
			if isPrivileged {
				let folder = Self.join(resolved)
				var folderStatus = stat()
				let folderOwner = stat(folder, &folderStatus) == 0 ? folderStatus.st_uid : 0
				guard status.st_uid == 0 || status.st_uid == folderOwner else {
					refusal =
						"the symbolic link \(candidate) belongs to \(describeUser(status.st_uid)) and lies in a folder of "
						+ "\(describeUser(folderOwner)), and root does not follow such a link: a process running as root "
						+ "follows a link only if it belongs to root or to the folder's owner"
					return
				}
				if status.st_uid != 0 {
					guardians.insert(status.st_uid)
				}
			}
			guard let target = Self.linkTarget(atPath: candidate) else {
				isMissing = true
				resolved.append(component)
				continue
			}
			if target.hasPrefix("/") {
				resolved = []
			}
			pending += Self.components(of: target).reversed()
		}
		path = Self.join(resolved)
		self.guardians = guardians.sorted()
	}

	private static func components(of path: String) -> [String] {
		path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
	}

	private static func join(_ components: [String]) -> String {
		"/" + components.joined(separator: "/")
	}

	/// Where the link at `path` points, as written in the link.
	private static func linkTarget(atPath path: String) -> String? {
		var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
		let count = readlink(path, &buffer, buffer.count - 1)
		guard count > 0 else {
			return nil
		}
		return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
	}
}
