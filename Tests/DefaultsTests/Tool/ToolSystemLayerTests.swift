import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// `defaults -system`: root writes the system layer of a domain, `<name>.plist` and `<name>.locks.plist` in the first
/// folder of `$XDG_CONFIG_DIRS` (two folders here), never through a link planted at those files; anyone else is
/// refused before anything is written.
@Suite(.serialized, .scaledTimeLimit(minutes: 1)) struct ToolSystemLayerTests {
	let tool: ToolRunner
	let first: URL
	let second: URL

	init() throws {
		tool = try ToolRunner(systemFolders: ["system-first", "system-second"])
		(first, second) = (tool.systemFolders[0], tool.systemFolders[1])
	}

	@discardableResult
	func run(_ arguments: String...) throws -> ChildProcess.Result {
		try tool.run(arguments)
	}

	@discardableResult
	func succeed(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
		try tool.succeed(arguments, sourceLocation: sourceLocation)
	}

	func contents(_ url: URL) throws -> [String: Any] {
		try PropertyListFile.decode(Data(contentsOf: url))
	}

	func mode(_ url: URL) -> mode_t {
		var status = stat()
		return lstat(url.path, &status) == 0 ? status.st_mode : 0
	}

	@Test(.enabled(if: geteuid() == 0, "-system is root's"))
	func rootWritesSystemDefaultsAndLocksInTheFirstFolder() throws {
		let defaults = first.appending(path: "app.plist")
		let locks = first.appending(path: "app.locks.plist")
		try succeed("-system", "write", "app", "theme", "dark")
		try succeed("write", "-system", "app", "size", "-int", "3")
		#expect(try contents(defaults)["theme"] as? String == "dark")
		#expect(try contents(defaults)["size"] as? Int == 3)
		#expect(mode(defaults) & 0o7777 == 0o644, "every user's app reads it")
		#expect(String(decoding: try Data(contentsOf: defaults), as: UTF8.self).hasPrefix("<?xml"))
		#expect(try succeed("read", "-source", "app", "theme") == "theme = dark; (system, \(defaults.path))\n")
		#expect(!FileManager.default.fileExists(atPath: tool.file("app").path), "the user's file is not made")
		#expect(try FileManager.default.contentsOfDirectory(atPath: second.path).isEmpty)

		// Locked at its system-wide default, then at a value of its own.
		try succeed("-system", "lock", "app", "theme")
		try succeed("-system", "lock", "app", "volume", "-int", "7")
		#expect(try contents(locks)["theme"] as? String == "dark")
		#expect(try contents(locks)["volume"] as? Int == 7)
		#expect(mode(locks) & 0o7777 == 0o644)
		let refused = try run("write", "app", "volume", "-int", "9")
		#expect(refused.status == 77, "\(refused)")
		#expect(try succeed("read", "app", "volume") == "7\n")
		#expect(try run("-system", "lock", "app", "unset").status == 64, "no system-wide default to lock at")

		try succeed("-system", "unlock", "app", "volume")
		try succeed("write", "app", "volume", "-int", "9")
		#expect(try succeed("read", "app", "volume") == "9\n")
		#expect(try run("-system", "unlock", "app", "volume").status == 1)
		try succeed("-system", "delete", "app", "theme")
		#expect(try contents(defaults)["theme"] == nil)
		#expect(try run("-system", "delete", "app", "theme").status == 1)
		try succeed("-system", "delete", "app")
		#expect(try contents(defaults).isEmpty)

		// A lock of a later folder is named, and left alone.
		try PropertyListSerialization.data(fromPropertyList: ["kept": 1], format: .xml, options: 0)
			.write(to: second.appending(path: "app.locks.plist"))
		let later = try run("-system", "unlock", "app", "kept")
		#expect(later.status == 1 && later.standardError.contains(second.path), "\(later)")
		#expect(try contents(second.appending(path: "app.locks.plist"))["kept"] as? Int == 1)
	}

	/// Root's writes of the system layer convert a bare value by the app's schema, or refuse it, as a user's write does:
	/// the schema beside the domain's settings file, or the one `-schema` names.
	@Test(.enabled(if: geteuid() == 0, "-system is root's"))
	func systemWritesConvertAndRefuseByTheSchema() throws {
		let defaults = first.appending(path: "app.plist")
		let locks = first.appending(path: "app.locks.plist")
		try ToolSchemaTests.writeSchema(for: tool)
		try succeed("-system", "write", "app", "homepage", "https://example.com")
		try succeed("-system", "lock", "app", "count", "7")
		let homepage = try #require(try contents(defaults)["homepage"] as? String)
		#expect(try JSONDecoder().decode(URL.self, from: Data(homepage.utf8)) == URL(string: "https://example.com"))
		#expect(try contents(locks)["count"] as? Int == 7)
		let before = try Data(contentsOf: defaults)
		let refused = try run("-system", "write", "app", "count", "twelve")
		#expect(refused.status == 65 && refused.standardError.contains("-string"), "\(refused)")
		let refusedLock = try run("-system", "lock", "app", "window", "big")
		#expect(refusedLock.status == 65 && refusedLock.standardError.contains("-json"), "\(refusedLock)")
		#expect(try Data(contentsOf: defaults) == before)
		#expect(try contents(locks).count == 1)

		// A schema elsewhere, named on the command line, and none beside the settings file.
		let elsewhere = tool.folder.file("app-keys.plist")
		try FileManager.default.moveItem(at: SchemaFile.url(besideSettingsFile: tool.file("app")), to: elsewhere)
		try succeed("-system", "write", "app", "id", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
		#expect(try contents(defaults)["id"] as? String == "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
		try succeed("-system", "-schema", elsewhere.path, "write", "app", "id", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
		#expect(try contents(defaults)["id"] as? String == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
		let missing = try run("-system", "-schema", tool.folder.file("none.plist").path, "write", "app", "k", "v")
		#expect(missing.status == 66, "\(missing)")
		#expect(try contents(defaults)["k"] == nil)
	}

	@Test(.enabled(if: geteuid() == 0, "-system is root's"))
	func aSystemFileThatExistsKeepsItsModeItsOtherKeysAndEveryValueExactly() throws {
		let defaults = first.appending(path: "app.plist")
		let fine = Date(timeIntervalSinceReferenceDate: 0.5)
		let data = try PropertyListSerialization.data(
			fromPropertyList: ["other": 1, "when": fine], format: .binary, options: 0)
		try data.write(to: defaults)
		chmod(defaults.path, 0o640)
		let refused = try run("-system", "write", "app", "k", "v")
		#expect(refused.status == 65 && refused.standardError.contains("finer than a second"), "\(refused)")
		#expect(try Data(contentsOf: defaults) == data)
		try PropertyListSerialization.data(fromPropertyList: ["other": 1], format: .binary, options: 0)
			.write(to: defaults)
		try succeed("-system", "write", "app", "k", "v")
		#expect(mode(defaults) & 0o7777 == 0o640)
		#expect(try contents(defaults)["other"] as? Int == 1)
		#expect(try contents(defaults)["k"] as? String == "v")
	}

	@Test(.enabled(if: geteuid() == 0, "-system is root's"))
	func runsAtOnceKeepEveryChange() throws {
		let runs = try (0..<8).map { index in
			try ChildProcess(
				["-system", index.isMultiple(of: 2) ? "write" : "lock", "app", "key\(index)", "-int", "\(index)"],
				executable: "defaults", environment: tool.environment)
		}
		for child in runs {
			defer { child.kill() }
			let result = try child.wait(timeout: 30)
			#expect(result.status == 0, "\(result)")
		}
		let defaults = try contents(first.appending(path: "app.plist"))
		let locks = try contents(first.appending(path: "app.locks.plist"))
		#expect(defaults.count == 4 && locks.count == 4, "\(defaults) \(locks)")
	}

	@Test func systemTakesAStoreNameAndOnlyTheVerbsThatWriteTheSystemLayer() throws {
		for arguments in [
			["-system", "read", "app"], ["-system", "increment", "app", "k"],
			["-system", "-app", tool.file("app").path, "write", "k", "v"],
			["-system", "write", "./app.plist", "k", "v"],
			["lock", "app", "k", "v"], ["unlock", "app", "k"],
		] {
			let result = try ChildProcess.run(arguments, executable: "defaults", environment: tool.environment)
			#expect(result.status == 64, "\(arguments): \(result)")
		}
		#expect(try FileManager.default.contentsOfDirectory(atPath: first.path).isEmpty)
	}

	@Test(.enabled(if: geteuid() == 0, "the test runs the command as another user"))
	func aRunOfSystemWritesByAnyoneButRootFailsClearlyAndWritesNothing() throws {
		// A folder anyone may write, so that only the command's own rule refuses.
		chmod(first.path, 0o777)
		let executable = try ChildProcess.helperURL(named: "defaults").path
		for verb in [
			["write", "app", "k", "v"], ["lock", "app", "k", "v"], ["delete", "app"], ["unlock", "app", "k"],
		] {
			let result = try ChildProcess.run(
				["--reuid=65534", "--regid=65534", "--clear-groups", executable, "-system"] + verb,
				executable: "/usr/bin/setpriv", environment: tool.environment)
			#expect(result.status == 74, "\(verb): \(result)")
			#expect(result.standardError.contains("only root"), "\(verb): \(result)")
		}
		#expect(try FileManager.default.contentsOfDirectory(atPath: first.path).isEmpty)
	}

	@Test(.enabled(if: geteuid() == 0, "the rule is root's"))
	func rootNeitherFollowsNorReplacesALinkPlantedAtASystemFile() throws {
		let user = try TemporaryUser()
		let target = tool.folder.file("target.plist")
		let precious = try PropertyListSerialization.data(
			fromPropertyList: ["precious": 1], format: .binary, options: 0)
		try precious.write(to: target)
		// A folder the user owns, a link of theirs; and a link of root's in root's own folder.
		try user.own(first)
		for (name, owner) in [("app.plist", user.uid), ("app.locks.plist", user.uid)] {
			let link = first.appending(path: name)
			try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: target.path)
			#expect(lchown(link.path, owner, owner) == 0)
		}
		let attempts: [[String]] = [
			["-system", "write", "app", "k", "v"], ["-system", "delete", "app"], ["-system", "lock", "app", "k", "v"],
			["-system", "unlock", "app", "precious"],
		]
		for arguments in attempts {
			let result = try ChildProcess.run(arguments, executable: "defaults", environment: tool.environment)
			#expect(result.status == 74, "\(arguments): \(result)")
			#expect(result.standardError.contains("symbolic link"), "\(arguments): \(result)")
		}
		try FileManager.default.removeItem(at: first)
		try FileManager.default.createDirectory(at: first, withIntermediateDirectories: false)
		let rootLink = first.appending(path: "app.plist")
		try FileManager.default.createSymbolicLink(atPath: rootLink.path, withDestinationPath: target.path)
		let result = try run("-system", "write", "app", "k", "v")
		#expect(result.status == 74 && result.standardError.contains("symbolic link"), "\(result)")
		#expect(mode(rootLink) & S_IFMT == S_IFLNK, "the link stays")
		#expect(try Data(contentsOf: target) == precious, "nothing was written through a link")
		// A file another user planted in a folder they may write is neither read nor written.
		try FileManager.default.removeItem(at: rootLink)
		chmod(first.path, 0o777)
		try precious.write(to: rootLink)
		#expect(chown(rootLink.path, user.uid, user.gid) == 0)
		let planted = try run("-system", "write", "app", "k", "v")
		#expect(planted.status == 74, "\(planted)")
		#expect(try Data(contentsOf: rootLink) == precious)
	}
}
