import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// System-wide defaults: `<name>.plist` in each folder of `$XDG_CONFIG_DIRS`, beneath the user's values and above
/// registered defaults, the first folder winning, watched, hostile files refused.
@Suite(.scaledTimeLimit(minutes: 1)) struct SystemLayerTests {
	let home: TemporaryDirectory
	let first: TemporaryDirectory
	let second: TemporaryDirectory
	let url: URL

	init() throws {
		home = try TemporaryDirectory()
		first = try TemporaryDirectory()
		second = try TemporaryDirectory()
		url = home.file("app.plist")
	}

	func store() -> Defaults.FileStore {
		Defaults.FileStore.at(url, systemFolders: [first.url, second.url])
	}

	func writeSystemFile(_ values: [String: Any], in folder: TemporaryDirectory) throws {
		let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
		try data.write(to: folder.file("app.plist"), options: .atomic)
	}

	@Test func theFirstFolderShadowsTheSecondAndTheUsersValueShadowsBoth() throws {
		try writeSystemFile(["theme": "first", "size": 12], in: first)
		try writeSystemFile(["theme": "second", "size": 10, "font": "Mono"], in: second)
		try Data("<plist><dict><key>user</key><string>kept</string></dict></plist>".utf8).write(to: url)
		let before = try Data(contentsOf: url)
		let store = store()
		store.registerDefaultValues(["font": "registered", "lines": 40])
		#expect(store.storedValue(forKey: "lines") as? Int == 40)
		#expect(store.storedValue(forKey: "font") as? String == "Mono")
		let theme = Defaults.Key<String>("theme", default: "", suite: store)
		#expect(Defaults[theme] == "first")
		#expect(Defaults[Defaults.Key<Int>("size", default: 0, suite: store)] == 12)
		#expect(Defaults[Defaults.Key<String>("font", default: "", suite: store)] == "Mono")
		#expect(store.storedKeys() == ["user"])
		#expect(try Data(contentsOf: url) == before)
		Defaults[theme] = "mine"
		#expect(Defaults[theme] == "mine")
		Defaults.reset(theme)
		#expect(Defaults[theme] == "first")
		#expect(store.flush())
		#expect(Defaults.Snapshot.storedForms(in: store) as NSDictionary == ["user": "kept"] as NSDictionary)
	}

	@Test func anAdministratorsEditReachesObservers() async throws {
		try writeSystemFile(["level": 1], in: second)
		let store = store()
		let level = Defaults.Key<Int>("level", default: 0, suite: store)
		#expect(Defaults[level] == 1)
		let heard = Recorder<Int>()
		let observation = Defaults.observe(level, options: []) { heard.append($0.newValue) }
		defer { observation.invalidate() }
		try writeSystemFile(["level": 5], in: first)
		#expect(await eventually { heard.values.contains(5) })
		#expect(Defaults[level] == 5)
	}

	@Test(arguments: HostileFiles.all.map(\.name))
	func aHostileSystemFileIsRefusedAndReportedOnce(name: String) throws {
		let data = try #require(HostileFiles.all.first { $0.name == name }).data
		FailureRecorder.start()
		try data.write(to: first.file("app.plist"))
		try writeSystemFile(["safe": 1], in: second)
		let store = store()
		#expect(Defaults[Defaults.Key<Int>("safe", default: 0, suite: store)] == 1)
		let file = SettingsFile(url: first.file("app.plist"))
		// A few of them (a NaN date) are sound property lists the reader takes as they are.
		let isRefused = if case .values = file.read() { false } else { true }
		#expect(FailureRecorder.failures(mentioning: file.path).count == (isRefused ? 1 : 0))
		store.reloadSystemLayer()
		#expect(FailureRecorder.failures(mentioning: file.path).count == (isRefused ? 1 : 0))
		#expect(try Data(contentsOf: first.file("app.plist")) == data)
	}

	@Test func theFoldersComeFromXDGConfigDirs() {
		let folders = { (value: String?) in
			Defaults.FileStore.systemConfigurationDirectories(
				environment: value.map { ["XDG_CONFIG_DIRS": $0] } ?? [:]
			).map { $0.path(percentEncoded: false) }
		}
		#expect(folders(nil) == ["/etc/xdg/"])
		#expect(folders("") == ["/etc/xdg/"])
		#expect(folders("/opt/a:relative:/b") == ["/opt/a/", "/b/"])
	}
}

/// A system folder that does not exist is waited for with one inotify watch of the folder above it, never checked
/// every second, and an administrator who makes it later is heard.
@Suite(.scaledTimeLimit(minutes: 1)) struct MissingSystemFolderTests {
	#if os(Linux)
		@Test func aMissingFolderIsWatchedFromAboveAndHeardWhenMade() async throws {
			let home = try TemporaryDirectory()
			let above = try TemporaryDirectory()
			let missing = above.url.appending(path: "xdg/deeper", directoryHint: .isDirectory)
			let store = Defaults.FileStore.at(home.file("app.plist"), systemFolders: [missing])
			let folder = SettingsFile(url: missing.appending(path: "app.plist")).folderPath
			let watcher = try #require(InotifyWatcher.shared)
			#expect(watcher.pollCount(ofFolder: folder) == 0)
			// One watch for the system file and the locks beside it.
			#expect(watcher.awaitingCallCount(ofFolder: folder) == 2)
			let level = Defaults.Key<Int>("level", default: 0, suite: store)
			let heard = Recorder<Int>()
			let observation = Defaults.observe(level, options: []) { heard.append($0.newValue) }
			defer { observation.invalidate() }
			try FileManager.default.createDirectory(at: missing, withIntermediateDirectories: true)
			let data = try PropertyListSerialization.data(fromPropertyList: ["level": 4], format: .xml, options: 0)
			try data.write(to: missing.appending(path: "app.plist"), options: .atomic)
			#expect(await eventually { heard.values.contains(4) })
			#expect(watcher.awaitingCallCount(ofFolder: folder) == 0)
			#expect(watcher.pollCount(ofFolder: folder) == 0)
		}

		/// Once the missing folder is there it is watched in place of the folders above it, which are left, and an
		/// edit of a file made in it afterwards reaches observers.
		@Test func theFolderAboveIsLeftOnceTheFolderIsThereAndAFileWrittenInItIsHeard() async throws {
			let home = try TemporaryDirectory()
			let above = try TemporaryDirectory()
			let missing = above.url.appending(path: "xdg/deeper", directoryHint: .isDirectory)
			let store = Defaults.FileStore.at(home.file("app.plist"), systemFolders: [missing])
			let folder = SettingsFile(url: missing.appending(path: "app.plist")).folderPath
			let xdg = (folder as NSString).deletingLastPathComponent
			let top = (xdg as NSString).deletingLastPathComponent
			let watcher = try #require(InotifyWatcher.shared)
			#expect(watcher.isWatching(folder: top))
			#expect(!watcher.isWatching(folder: folder))
			let level = Defaults.Key<Int>("level", default: 0, suite: store)
			let heard = Recorder<Int>()
			let observation = Defaults.observe(level, options: []) { heard.append($0.newValue) }
			defer { observation.invalidate() }
			try FileManager.default.createDirectory(at: missing, withIntermediateDirectories: true)
			#expect(await eventually { watcher.isWatching(folder: folder) })
			#expect(!watcher.isWatching(folder: top))
			#expect(!watcher.isWatching(folder: xdg))
			#expect(watcher.awaitingCallCount(ofFolder: folder) == 0)
			let data = try PropertyListSerialization.data(fromPropertyList: ["level": 6], format: .xml, options: 0)
			try data.write(to: missing.appending(path: "app.plist"), options: .atomic)
			#expect(await eventually { heard.values.contains(6) })
			#expect(Defaults[level] == 6)
		}
	#endif
}

/// The layers are the file's, whichever opener comes first: a file of the configuration folder opened with
/// `FileStore.at(_:)` before `suite(named:)` or `standard` still reads the system-wide defaults, and the standard file
/// the launch arguments.
@Suite(.scaledTimeLimit(minutes: 1)) struct LayersBelongToTheFileTests {
	@Test func theFirstOpenerDoesNotDecideTheLayers() throws {
		let home = try TemporaryDirectory()
		let system = try TemporaryDirectory()
		for (name, value) in [("suite.plist", 1), ("DefaultsTestHelper.plist", 2)] {
			let data = try PropertyListSerialization.data(fromPropertyList: ["level": value], format: .xml, options: 0)
			try data.write(to: system.file(name))
		}
		let result = try ChildProcess.run(
			["layers-first-opener", "level", "-argument", "3"],
			environment: home.configEnvironment.merging(["XDG_CONFIG_DIRS": system.url.path(percentEncoded: false)]) {
				_, new in new
			})
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["same true", "suite int:1", "standard int:2", "argument string:3"])
	}

	@Test func onlyFilesOfTheConfigurationFolderReadSystemFolders() {
		let configuration = URL(filePath: "/home/someone/.config", directoryHint: .isDirectory)
		let layers = { (path: String) in
			FileStoreRegistry.layers(
				of: SettingsFile(url: URL(filePath: path)), configurationDirectory: configuration,
				standardURL: configuration.appending(path: "app.plist"),
				systemFolders: [URL(filePath: "/etc/xdg", directoryHint: .isDirectory)])
		}
		#expect(layers("/home/someone/.config/app.plist").isStandard)
		#expect(layers("/home/someone/.config/app.plist").folders.count == 1)
		#expect(!layers("/home/someone/.config/group.plist").isStandard)
		#expect(layers("/home/someone/.config/group.plist").folders.count == 1)
		#expect(layers("/var/lib/app/settings.plist").folders.isEmpty)
		#expect(!layers("/var/lib/app/settings.plist").isStandard)
	}
}

/// The environment layer: opt-in by a prefix, typed text read through each key's bridge, above the user's values and
/// beneath launch arguments and locks, never written. In a child process, since a variable set in the test process
/// would reach every test running beside it.
@Suite(.scaledTimeLimit(minutes: 1)) struct EnvironmentLayerTests {
	let home: TemporaryDirectory
	let system: TemporaryDirectory
	let userFile: URL

	init() throws {
		home = try TemporaryDirectory()
		system = try TemporaryDirectory()
		userFile = home.file("DefaultsTestHelper.plist")
		let user = try PropertyListSerialization.data(
			fromPropertyList: ["bad": 5, "stored": "mine", "other": "kept"], format: .binary, options: 0)
		try user.write(to: userFile)
		let locks = try PropertyListSerialization.data(fromPropertyList: ["locked": 9], format: .xml, options: 0)
		try locks.write(to: system.file("DefaultsTestHelper.locks.plist"))
	}

	func run(_ arguments: [String]) throws -> ChildProcess.Result {
		let environment = home.configEnvironment.merging([
			"XDG_CONFIG_DIRS": system.url.path(percentEncoded: false), "MYAPP_count": "42", "MYAPP_ratio": "1.5",
			"MYAPP_flag": "true", "MYAPP_name": "hello world", "MYAPP_home": "https://example.com/a?b=c",
			"MYAPP_point": #"{"x":1,"y":2}"#, "MYAPP_bad": "many", "MYAPP_shadowed": "1", "MYAPP_locked": "1",
			"MYAPP_stored": "from the environment", "MYAPP_": "no key",
		]) { _, new in new }
		return try ChildProcess.run(["layers-environment"] + arguments, environment: environment)
	}

	@Test func variablesWithThePrefixReadAsTypedValuesInTheirPlace() throws {
		let before = try Data(contentsOf: userFile)
		let result = try run(["MYAPP_", "-shadowed", "2"])
		#expect(result.status == 0, "\(result)")
		let lockFile = SettingsFile(url: system.file("DefaultsTestHelper.locks.plist")).path
		#expect(
			result.lines == [
				"count 42 environment(variable: \"MYAPP_count\")",
				"ratio 1.5 environment(variable: \"MYAPP_ratio\")",
				"flag true environment(variable: \"MYAPP_flag\")",
				"name hello world environment(variable: \"MYAPP_name\")",
				"home https://example.com/a?b=c environment(variable: \"MYAPP_home\")",
				"point (1, 2) environment(variable: \"MYAPP_point\")",
				// Reported once, and skipped: the user's value reads.
				"failure bad",
				"bad 5 stored",
				"bad 5 stored",
				"shadowed 2 launchArgument",
				"locked 9 locked(file: \"\(lockFile)\")",
				"stored from the environment environment(variable: \"MYAPP_stored\")",
				"HOME  defaultValue",
				"stored from the environment environment(variable: \"MYAPP_stored\")",
			])
		// Nothing of the environment reached the file: the reset removed the user's value, the write added its own.
		#expect(before != (try Data(contentsOf: userFile)))
		#expect(
			try FileContents.values(of: userFile) as NSDictionary
				== ["bad": 5, "other": "kept", "written": 1] as NSDictionary)
	}

	@Test func nothingIsReadUnlessTheAppAsks() throws {
		let result = try run(["none"])
		#expect(result.status == 0, "\(result)")
		#expect(result.lines.first == "count 0 defaultValue")
		#expect(result.lines.contains("stored  defaultValue"))
	}
}
