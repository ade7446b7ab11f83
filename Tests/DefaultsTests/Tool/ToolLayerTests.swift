import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// `defaults` reads a domain as the app reads it, through its layers: values an administrator locked in
/// `<name>.locks.plist`, above the user's values, above system-wide defaults in `<name>.plist`, both in the folders of
/// `$XDG_CONFIG_DIRS` (two here, the first shadowing the second); the writing verbs write the user's file only and
/// refuse a locked key with status 77, writing nothing.
@Suite(.scaledTimeLimit(minutes: 1)) struct ToolLayerTests {
	let tool: ToolRunner
	let first: URL
	let second: URL

	init() throws {
		tool = try ToolRunner(systemFolders: ["system-first", "system-second"])
		(first, second) = (tool.systemFolders[0], tool.systemFolders[1])
		try Self.write(["shadowed": "first", "onlyFirst": 1], to: first.appending(path: "app.plist"))
		try Self.write(
			["shadowed": "second", "onlySecond": 2, "mine": "system", "channel": "system"],
			to: second.appending(path: "app.plist"))
		try Self.write(["channel": "stable"], to: second.appending(path: "app.locks.plist"))
		try tool.seed("app", ["mine": "user", "channel": "user"])
	}

	static func write(_ values: [String: Any], to url: URL) throws {
		try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0).write(to: url)
	}

	@discardableResult
	func run(_ arguments: String...) throws -> ChildProcess.Result {
		try tool.run(arguments)
	}

	@discardableResult
	func succeed(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
		try tool.succeed(arguments, sourceLocation: sourceLocation)
	}

	func json(_ text: String) throws -> [String: Any] {
		try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
	}

	/// Every file of the layers, as bytes, to show that reads and refused writes change none of them.
	func files() throws -> [String: Data] {
		var files: [String: Data] = [:]
		for url in [tool.file("app"), first.appending(path: "app.plist"), second.appending(path: "app.plist")] {
			files[url.path] = try Data(contentsOf: url)
		}
		files["locks"] = try Data(contentsOf: second.appending(path: "app.locks.plist"))
		return files
	}

	@Test func readShowsWhatTheAppReadsLocksFirstThenTheUserThenTheFirstSystemFolder() throws {
		let before = try files()
		let values = try json(try succeed("--json", "read", "app"))
		#expect(values["channel"] as? String == "stable")
		#expect(values["mine"] as? String == "user")
		#expect(values["shadowed"] as? String == "first")
		#expect(values["onlyFirst"] as? Int == 1)
		#expect(values["onlySecond"] as? Int == 2)
		#expect(values.count == 5)
		#expect(try succeed("read", "app", "channel") == "stable\n")
		#expect(try succeed("read", "app", "onlySecond") == "2\n")
		#expect(try succeed("read-type", "app", "onlyFirst") == "Type is integer\n")
		let exported = try PropertyListSerialization.propertyList(
			from: Data(try succeed("export", "app", "-").utf8), format: nil)
		#expect((exported as? [String: Any])?["channel"] as? String == "stable")
		#expect((exported as? [String: Any])?.count == 5)
		let all = try json(try succeed("--json", "read"))
		#expect((all["app"] as? [String: Any])?["shadowed"] as? String == "first")
		#expect(try succeed("find", "onlySecond").contains("onlySecond = 2"))
		#expect(try files() == before, "a read changed a file")
	}

	@Test func readSourceNamesTheLayerAndTheFileOfEachValue() throws {
		let sources = try json(try succeed("--json", "read", "-source", "app"))
		func source(_ key: String) -> (String?, String?) {
			let entry = sources[key] as? [String: Any]
			return (entry?["layer"] as? String, entry?["file"] as? String)
		}
		#expect(source("channel") == ("locked", second.appending(path: "app.locks.plist").path))
		#expect(source("mine") == ("stored", tool.file("app").path))
		#expect(source("shadowed") == ("system", first.appending(path: "app.plist").path))
		#expect(source("onlySecond") == ("system", second.appending(path: "app.plist").path))
		#expect((sources["channel"] as? [String: Any])?["value"] as? String == "stable")
		let text = try succeed("read", "-source", "app")
		#expect(text.contains("channel = stable; (locked, \(second.path)/app.locks.plist)\n"), "\(text)")
		#expect(text.contains("mine = user; (stored, \(tool.file("app").path))\n"), "\(text)")
		#expect(
			try succeed("read", "-source", "app", "onlyFirst") == "onlyFirst = 1; (system, \(first.path)/app.plist)\n")
		let one = try json(try succeed("--json", "read", "app", "-source", "mine"))
		#expect(one["layer"] as? String == "stored" && one["value"] as? String == "user")
		#expect(try run("read", "-source", "app", "missing").status == 1)
	}

	@Test func aDomainOfSystemFilesAloneReadsAndAFileOutsideTheConfigurationFolderReadsAlone() throws {
		try Self.write(["fromSystem": true], to: first.appending(path: "fresh.plist"))
		#expect(try json(try succeed("--json", "read", "fresh"))["fromSystem"] as? Bool == true)
		#expect(try run("read", "absent").status == 1)
		// `-app` of the domain's own file reads its layers; any other file is read as `FileStore.at` reads it.
		#expect(
			try json(try succeed("--json", "-app", tool.file("app").path, "read"))["channel"] as? String == "stable")
		let elsewhere = tool.folder.file("elsewhere")
		try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: false)
		try Self.write(["mine": "alone"], to: elsewhere.appending(path: "app.plist"))
		let alone = try json(try succeed("--json", "read", elsewhere.appending(path: "app.plist").path))
		#expect(alone.count == 1 && alone["mine"] as? String == "alone")
	}

	/// One rule for the app and the command: the system files are named after the file's name in the configuration
	/// folder, a link's name (dotfiles) rather than its target's; a file reached from outside the folder through a
	/// link into it is known there by its own name.
	@Test func aLinkedSettingsFileReadsTheSystemFilesOfItsNameInTheFolderInTheAppAndTheCommand() throws {
		let dotfiles = tool.folder.file("dotfiles")
		try FileManager.default.createDirectory(at: dotfiles, withIntermediateDirectories: false)
		let target = dotfiles.appending(path: "mine.plist")
		try Self.write(["user": 1], to: target)
		let link = tool.file("editor")
		try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
		try tool.seed("real", ["user": 2])
		let alias = dotfiles.appending(path: "alias.plist")
		try FileManager.default.createSymbolicLink(at: alias, withDestinationURL: tool.file("real"))
		for name in ["editor", "mine", "real", "alias"] {
			try Self.write(["theme": name], to: first.appending(path: "\(name).plist"))
			try Self.write(["locked": name], to: first.appending(path: "\(name).locks.plist"))
		}
		for (domain, name) in [("editor", "editor"), (link.path, "editor"), ("real", "real"), (alias.path, "real")] {
			#expect(try succeed("read", domain, "theme") == "\(name)\n", "\(domain)")
			#expect(try succeed("read", domain, "locked") == "\(name)\n", "\(domain)")
		}
		// The app's store, by the same rule.
		let layers = { (url: URL) in
			FileStoreRegistry.layers(
				of: SettingsFile(url: url), configurationDirectory: tool.folder.url,
				standardURL: tool.file("standard"), systemFolders: tool.systemFolders)
		}
		#expect(layers(link).name == "editor.plist")
		#expect(layers(alias).name == "real.plist")
		#expect(layers(alias).folders.count == 2)
		let store = Defaults.FileStore.at(link, systemFolders: tool.systemFolders)
		#expect(store[Defaults.Key<String>("theme", default: "", suite: store)] == "editor")
		#expect(store[Defaults.Key<String>("locked", default: "", suite: store)] == "editor")
	}

	@Test func aSystemFileThatDoesNotReadIsLeftOutWithAWarningAndLeftAlone() throws {
		let broken = first.appending(path: "app.plist")
		for (name, data) in HostileFiles.all {
			try data.write(to: broken)
			let result = try run("--json", "read", "app")
			#expect(result.status == 0, "\(name): \(result)")
			// A few of them (a NaN date) are sound property lists the reader takes as they are.
			let isRefused = if case .values = SettingsFile(url: broken).read() { false } else { true }
			#expect(
				result.standardError.contains("\(SettingsFile(url: broken).path) is refused") == isRefused,
				"\(name): \(result)")
			let values = try json(result.standardOutput)
			#expect(values["shadowed"] as? String == "second", "\(name)")
			#expect(try Data(contentsOf: broken) == data, "\(name)")
		}
	}

	@Test func writesGoToTheUsersFileAndLeaveTheSystemFilesAlone() throws {
		let system = try files().filter { $0.key != tool.file("app").path }
		try succeed("write", "app", "shadowed", "mine")
		try succeed("increment", "app", "counter")
		#expect(try tool.contents(of: "app")["shadowed"] as? String == "mine")
		#expect(try succeed("read", "-source", "app", "shadowed").contains("(stored, "))
		try succeed("delete", "app", "shadowed")
		#expect(try succeed("read", "app", "shadowed") == "first\n", "the key reads the next layer")
		let result = try run("delete", "app", "onlySecond")
		#expect(result.status == 1, "\(result)")
		#expect(result.standardError.contains("system-wide default"), "\(result)")
		#expect(try files().filter { $0.key != tool.file("app").path } == system)
	}

	@Test func everyWritingVerbRefusesALockedKeyWithItsOwnStatusAndWritesNothing() throws {
		let input = tool.folder.file("input.plist")
		try Self.write(["channel": "beta", "mine": "user"], to: input)
		let before = try files()
		let refused: [[String]] = [
			["write", "app", "channel", "beta"],
			["write", "app", "channel", "-array-add", "x"],
			["increment", "app", "channel"],
			["delete", "app", "channel"],
			["delete", "app"],
			["rename", "app", "channel", "other"],
			["rename", "app", "mine", "channel"],
			["import", "app", input.path],
			["-app", tool.file("app").path, "write", "channel", "beta"],
		]
		for arguments in refused {
			let result = try ChildProcess.run(arguments, executable: "defaults", environment: tool.environment)
			#expect(result.status == 77, "\(arguments): \(result)")
			#expect(result.standardError.contains("locked by the administrator"), "\(arguments): \(result)")
			#expect(result.standardError.contains(second.appending(path: "app.locks.plist").path), "\(arguments)")
			#expect(try files() == before, "\(arguments) wrote")
		}
		// A key that is not locked is written as before.
		try succeed("write", "app", "free", "-int", "1")
	}

	@Test func theHelpListsTheLockedStatus() throws {
		#expect(try succeed("--help").contains("77  a write of a key an administrator locked"))
		#expect(try succeed("read", "--help").contains("-source"))
	}
}
