import DefaultsTestIsolation
import Foundation

#if canImport(Glibc)
	import Glibc
#endif

/// A user account that exists for one test: created with `useradd`, removed with `userdel` when the test drops it,
/// whether the test passed or not. Root only.
final class TemporaryUser: Sendable {
	let name: String
	let uid: uid_t
	let gid: gid_t

	init() throws {
		name = "dft" + String(UInt32.random(in: .min ... .max), radix: 16)
		try Self.run("/usr/sbin/useradd", ["--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name])
		guard let entry = getpwnam(name) else {
			try? Self.run("/usr/sbin/userdel", [name])
			throw UserError(description: "useradd made no entry for \(name)")
		}
		uid = entry.pointee.pw_uid
		gid = entry.pointee.pw_gid
	}

	deinit {
		try? Self.run("/usr/sbin/userdel", [name])
	}

	/// Makes `url` belong to this user, without following a link at `url`.
	func own(_ url: URL) throws {
		// Without a trailing `/`, which would make even `lchown` follow a link.
		var path = url.path(percentEncoded: false)
		while path.count > 1, path.hasSuffix("/") {
			path.removeLast()
		}
		guard lchown(path, uid, gid) == 0 else {
			throw UserError(description: "lchown \(url.path): \(String(cString: strerror(errno)))")
		}
	}

	struct UserError: Error, CustomStringConvertible {
		let description: String
	}

	private static func run(_ executable: String, _ arguments: [String]) throws {
		let process = Process()
		process.executableURL = URL(filePath: executable)
		process.arguments = arguments
		process.standardOutput = FileHandle.nullDevice
		process.standardError = FileHandle.nullDevice
		try process.run()
		process.waitUntilExit()
		guard process.terminationStatus == 0 else {
			throw UserError(description: "\(executable) \(arguments) ended with \(process.terminationStatus)")
		}
	}
}

extension TemporaryDirectory {
	/// A folder that another user can reach, for a test run as root that hands it (or what is in it) to that user:
	/// the run's temporary folder may sit in a private one (`TMPDIR=$(mktemp -d)`), which the store rightly refuses
	/// to pass through for them. See `defaults_test_shared_folder` in Tests/DefaultsTestIsolation.
	static func reachableByEveryUser() throws -> TemporaryDirectory {
		let folder = try TemporaryDirectory(
			under: defaults_test_shared_folder().map { URL(filePath: String(cString: $0), directoryHint: .isDirectory) }
		)
		// Whatever the umask: the other user passes through and reads, as through a home folder.
		chmod(folder.url.path, 0o755)
		return folder
	}
}
