import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// A store and the `defaults` command run as root with the `HOME` of a user who planted links in their own folder
/// (`sudo app`, `sudo defaults write`): nothing outside that user's folder may change.
@Suite(.serialized, .enabled(if: geteuid() == 0, "only root can be steered by another user's links"))
struct FileStoreRootTests {
	let folder: TemporaryDirectory
	let user: TemporaryUser
	let home: URL
	let config: URL
	/// Root's own folder, which the user can read but not change.
	let system: URL

	init() throws {
		folder = try TemporaryDirectory.reachableByEveryUser()
		user = try TemporaryUser()
		home = folder.file("home")
		config = home.appending(path: ".config", directoryHint: .isDirectory)
		system = folder.file("system")
		for made in [home, config, system] {
			try FileManager.default.createDirectory(at: made, withIntermediateDirectories: false)
		}
		try user.own(home)
		try user.own(config)
		chmod(config.path, 0o700)
		chmod(system.path, 0o755)
		try Data("precious=KEEP\n".utf8).write(to: system.appending(path: "target.conf"))
		try PropertyListSerialization.data(fromPropertyList: ["precious": "KEEP"], format: .binary, options: 0)
			.write(to: system.appending(path: "target.plist"))
	}

	/// Plants, as the user, a link in the user's configuration folder.
	func plant(_ name: String, to destination: URL, ownedBy owner: uid_t? = nil) throws {
		let link = config.appending(path: name)
		try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: destination.path)
		try user.own(link)
		if let owner {
			#expect(lchown(link.path, owner, owner) == 0)
		}
	}

	@Test func aStoreRunAsRootChangesNothingALinkPointsAtOutsideTheUsersFolder() throws {
		try plant("app.plist", to: system.appending(path: "target.conf"))
		try plant("valid.plist", to: system.appending(path: "target.plist"))
		try plant("fresh.plist", to: system.appending(path: "created.plist"))
		try plant("folder", to: system)
		let before = try FolderSnapshot(system)
		FailureRecorder.start()
		let urls = ["app.plist", "valid.plist", "fresh.plist", "folder/inner.plist"].map { config.appending(path: $0) }
		for url in urls {
			let store = Defaults.FileStore.at(url)
			store.setStoredValue("root", forKey: "written")
			#expect(!store.flush(), "\(url.path) was written through the user's link")
			store.discardPendingChanges()
		}
		#expect(try FolderSnapshot(system) == before, "root changed a file the user's link points at")
		let messages = FailureRecorder.failures(forKey: "").map(\.message)
		#expect(messages.contains { $0.contains(config.appending(path: "app.plist").path) && $0.contains("root") })
	}

	@Test func theDefaultsCommandRunAsRootChangesNothingALinkPointsAtOutsideTheUsersFolder() throws {
		try plant("app.plist", to: system.appending(path: "target.conf"))
		try plant("valid.plist", to: system.appending(path: "target.plist"))
		try plant("fresh.plist", to: system.appending(path: "created.plist"))
		let before = try FolderSnapshot(system)
		// `sudo` keeps the user's `HOME`; no `XDG_CONFIG_HOME`, so the command finds `~/.config`.
		let environment = ["HOME": home.path, "XDG_CONFIG_HOME": ""]
		for domain in ["app", "valid", "fresh"] {
			let result = try ChildProcess.run(
				["write", domain, "written", "-string", "root"], executable: "defaults", environment: environment)
			#expect(result.status != 0, "defaults wrote \(domain) through the user's link: \(result)")
			_ = try ChildProcess.run(["delete", domain], executable: "defaults", environment: environment)
		}
		#expect(try FolderSnapshot(system) == before, "root changed a file the user's link points at")
	}

	@Test func rootFollowsAUsersLinkIntoAFolderTheUserOwnsAndKeepsEverythingTheirs() throws {
		let dotfiles = home.appending(path: "dotfiles", directoryHint: .isDirectory)
		try FileManager.default.createDirectory(at: dotfiles, withIntermediateDirectories: false)
		try user.own(dotfiles)
		let target = dotfiles.appending(path: "app.plist")
		try PropertyListSerialization.data(fromPropertyList: ["kept": 1], format: .binary, options: 0).write(to: target)
		try user.own(target)
		try plant("app.plist", to: target)
		let store = Defaults.FileStore.at(config.appending(path: "app.plist"))
		#expect(store.storedValue(forKey: "kept") as? Int == 1)
		store.setStoredValue(2, forKey: "added")
		#expect(store.flush())
		#expect(try PropertyListFile.decode(Data(contentsOf: target))["added"] as? Int == 2)
		for name in try FileManager.default.contentsOfDirectory(atPath: dotfiles.path) {
			var status = stat()
			#expect(lstat(dotfiles.appending(path: name).path, &status) == 0)
			#expect(status.st_uid == user.uid, "\(name) was left to root")
		}
	}

	@Test func aFolderSwappedForALinkAfterTheChecksDoesNotRedirectRootsWrite() throws {
		let url = config.appending(path: "app.plist")
		try PropertyListSerialization.data(fromPropertyList: ["kept": 1], format: .binary, options: 0).write(to: url)
		try user.own(url)
		let store = Defaults.FileStore.at(url)
		#expect(store.storedValue(forKey: "kept") as? Int == 1)
		let before = try FolderSnapshot(system)
		// The user swaps `~/.config` for a link to root's folder, after any check the store made.
		try FileManager.default.moveItem(at: config, to: home.appending(path: "config-real"))
		try FileManager.default.createSymbolicLink(atPath: config.path, withDestinationPath: system.path)
		try user.own(config)
		#expect(throws: (any Error).self) {
			try store.file.replace(with: ["written": "root"])
		}
		if case .values = store.file.read() {
			Issue.record("root read through the swapped-in link")
		}
		store.setStoredValue("root", forKey: "written")
		#expect(!store.flush())
		store.discardPendingChanges()
		let after = try FolderSnapshot(system)
		#expect(after == before, "root wrote through a folder swapped for a link: \(before) AFTER \(after)")
	}

	@Test func anExportRunAsRootThroughAUsersLinkChangesNothingOutsideTheUsersFolder() throws {
		let target = system.appending(path: "target.conf")
		chmod(target.path, 0o640)
		// The user's own links in the user's own folder, which root follows, to root's file and to root's folder.
		for (name, destination) in [("backup.plist", target), ("out", system)] {
			let link = home.appending(path: name)
			try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: destination.path)
			try user.own(link)
		}
		var before = stat()
		#expect(lstat(target.path, &before) == 0)
		let snapshot = try FolderSnapshot(system)
		let environment = ["HOME": home.path, "XDG_CONFIG_HOME": ""]
		_ = try ChildProcess.run(
			["write", "src", "k", "-string", "v"], executable: "defaults", environment: environment)
		for destination in ["backup.plist", "out/target.conf"].map({ home.appending(path: $0).path }) {
			for verb in ["export", "snapshot"] {
				let result = try ChildProcess.run(
					[verb, "src", destination], executable: "defaults", environment: environment)
				#expect(result.status == 73, "\(verb) wrote through the user's link at \(destination): \(result)")
				#expect(result.standardError.contains("cannot be written"), "\(result)")
			}
		}
		var after = stat()
		#expect(lstat(target.path, &after) == 0)
		#expect(after.st_uid == before.st_uid && after.st_gid == before.st_gid && after.st_mode == before.st_mode)
		#expect(try Data(contentsOf: target) == Data("precious=KEEP\n".utf8))
		#expect(try FolderSnapshot(system) == snapshot, "root changed a file the user's link points at")
	}

	@Test func aHardLinkAtTheLockPathIsNeitherGivenAwayNorUsed() throws {
		let target = system.appending(path: "target.conf")
		chmod(target.path, 0o640)
		// Root's file, linked by name into the user's folder where the lock of `app.plist` goes.
		#expect(link(target.path, config.appending(path: ".app.plist.lock").path) == 0)
		var before = stat()
		#expect(lstat(target.path, &before) == 0)
		let store = Defaults.FileStore.at(config.appending(path: "app.plist"))
		store.setStoredValue("root", forKey: "written")
		#expect(!store.flush(), "root used a hard link to its own file as the lock")
		store.discardPendingChanges()
		var after = stat()
		#expect(lstat(target.path, &after) == 0)
		#expect(after.st_uid == 0 && after.st_gid == before.st_gid && after.st_mode == before.st_mode)
		#expect(try Data(contentsOf: target) == Data("precious=KEEP\n".utf8))
		#expect(!FileManager.default.fileExists(atPath: config.appending(path: "app.plist").path))
	}

	@Test func aLinkSwappedInAtTheFileNameLendsItsTargetNeitherOwnerNorMode() throws {
		let url = config.appending(path: "app.plist")
		try PropertyListSerialization.data(fromPropertyList: ["kept": 1], format: .binary, options: 0).write(to: url)
		try user.own(url)
		let store = Defaults.FileStore.at(url)
		#expect(store.storedValue(forKey: "kept") as? Int == 1)
		let target = system.appending(path: "target.conf")
		chmod(target.path, 0o644)
		// After the store resolved the path, the user puts a link to root's file where the settings file was.
		try FileManager.default.removeItem(at: url)
		try FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: target.path)
		try user.own(url)
		_ = try store.file.replace(with: ["written": "root"])
		var status = stat()
		#expect(lstat(url.path, &status) == 0)
		#expect(status.st_mode & S_IFMT == S_IFREG)
		#expect(status.st_uid == user.uid, "the new file took the owner of the link's target")
		#expect(status.st_mode & 0o777 == 0o600, "the new file took the mode of the link's target")
		#expect(try Data(contentsOf: target) == Data("precious=KEEP\n".utf8))
	}

	@Test func rootWritesNoSyncFileThroughALinkPlantedAtItsTemporaryName() throws {
		// Another user's private file, and a sync queue beside a domain in the user's folder.
		let other = try TemporaryUser()
		let victim = system.appending(path: "private.json")
		try Data("secret".utf8).write(to: victim)
		try other.own(victim)
		chmod(victim.path, 0o600)
		let queue = config.appending(path: "app.plist.sync.queue.json")
		try Data("{}".utf8).write(to: queue)
		try user.own(queue)
		// The user plants links at every name a temporary file beside the queue or the state could take: the names
		// the sync files were written through before, which held the writer's process id.
		let state = config.appending(path: "app.plist.sync.json")
		for file in [queue, state] {
			try plant(".\(file.lastPathComponent).\(getpid()).tmp", to: victim)
		}
		let victimBefore = try FolderSnapshot(system)
		#expect(Defaults.SyncEngine.replaceFileBeside(at: queue, with: Data("{\"names\":[]}".utf8), mode: 0o600))
		#expect(Defaults.SyncEngine.replaceFileBeside(at: state, with: Data("{}".utf8), mode: 0o600))
		#expect(try FolderSnapshot(system) == victimBefore, "root wrote through the user's link")
		for file in [queue, state] {
			var status = stat()
			#expect(lstat(file.path, &status) == 0)
			#expect(status.st_mode & S_IFMT == S_IFREG, "\(file.lastPathComponent) became a link")
			#expect(status.st_uid == user.uid, "\(file.lastPathComponent) was not left to the folder's owner")
			#expect(status.st_mode & 0o777 == 0o600)
		}
		// A link at a sync file's own name is neither read nor written through: it is replaced.
		try FileManager.default.removeItem(at: queue)
		try plant(queue.lastPathComponent, to: victim)
		guard case .refused = SettingsFile(besideFileAt: queue).readBesideFile() else {
			Issue.record("root read the sync queue through the user's link")
			return
		}
		#expect(Defaults.SyncEngine.replaceFileBeside(at: queue, with: Data("{\"names\":[]}".utf8), mode: 0o600))
		#expect(try FolderSnapshot(system) == victimBefore, "root wrote through the user's link")
		#expect(try Data(contentsOf: queue) == Data("{\"names\":[]}".utf8))
	}

	@Test func aSettingsFilePlantedByAnotherUserInAGroupWritableFolderIsNeitherReadNorWritten() throws {
		// The user's folder lets a group write in it; another user puts a file of their own, readable by all, there.
		let other = try TemporaryUser()
		chmod(config.path, 0o770)
		let url = config.appending(path: "app.plist")
		let planted = try PropertyListSerialization.data(
			fromPropertyList: ["planted": "by the other user"], format: .binary, options: 0)
		try planted.write(to: url)
		try other.own(url)
		chmod(url.path, 0o644)
		FailureRecorder.start()
		let store = Defaults.FileStore.at(url)
		#expect(store.storedValue(forKey: "planted") == nil, "the planted file's values were taken in")
		store.setStoredValue("the user's secret", forKey: "secret")
		#expect(!store.flush(), "root wrote the user's values into a file another user owns")
		store.discardPendingChanges()
		let environment = ["HOME": home.path, "XDG_CONFIG_HOME": ""]
		let result = try ChildProcess.run(
			["write", "app", "secret", "-string", "the user's secret"], executable: "defaults", environment: environment
		)
		#expect(result.status != 0, "\(result)")
		#expect(result.standardError.contains("belongs to \(describeUser(other.uid))"), "\(result)")
		#expect(try Data(contentsOf: url) == planted)
		var status = stat()
		#expect(lstat(url.path, &status) == 0 && status.st_uid == other.uid && status.st_mode & 0o777 == 0o644)
		#expect(!FailureRecorder.failures(mentioning: "belongs to \(describeUser(other.uid))").isEmpty)
	}

	@Test func aLinkOwnedByAThirdUserIsNotFollowedByRoot() throws {
		let dotfiles = home.appending(path: "dotfiles", directoryHint: .isDirectory)
		try FileManager.default.createDirectory(at: dotfiles, withIntermediateDirectories: false)
		try user.own(dotfiles)
		try plant("app.plist", to: dotfiles.appending(path: "app.plist"), ownedBy: 65_534)
		let store = Defaults.FileStore.at(config.appending(path: "app.plist"))
		store.setStoredValue(1, forKey: "k")
		#expect(!store.flush())
		store.discardPendingChanges()
		#expect(try FileManager.default.contentsOfDirectory(atPath: dotfiles.path).isEmpty)
	}
}

/// Every entry of a folder tree as `lstat` and the bytes see it, with the folder's own modification time (a file
/// created and removed again still changes it).
struct FolderSnapshot: Equatable, CustomStringConvertible {
	var entries: [String: String] = [:]

	init(_ url: URL) throws {
		try add(url.path(percentEncoded: false), as: ".")
	}

	private mutating func add(_ path: String, as name: String) throws {
		var status = stat()
		guard lstat(path, &status) == 0 else {
			throw CocoaError(.fileReadNoSuchFile)
		}
		var line = "uid \(status.st_uid) gid \(status.st_gid) mode \(String(status.st_mode, radix: 8))"
		switch status.st_mode & S_IFMT {
		case S_IFDIR:
			line += " mtime \(status.st_mtim.tv_sec).\(status.st_mtim.tv_nsec)"
			for child in try FileManager.default.contentsOfDirectory(atPath: path) {
				try add(path + "/" + child, as: name + "/" + child)
			}
		case S_IFLNK:
			line += " -> " + (try FileManager.default.destinationOfSymbolicLink(atPath: path))
		default:
			line += " bytes " + (try Data(contentsOf: URL(filePath: path))).base64EncodedString()
		}
		entries[name] = line
	}

	var description: String {
		entries.keys.sorted().map { "\($0): \(entries[$0]!)" }.joined(separator: "\n")
	}
}
