import Foundation
import Testing

@testable import Defaults

/// Keys an administrator locked in `<name>.locks.plist` of a folder of `$XDG_CONFIG_DIRS`: they read the locked
/// value above every layer, and every write of them changes nothing and says so.
@Suite(.scaledTimeLimit(minutes: 1)) struct LockLayerTests {
	let home: TemporaryDirectory
	let system: TemporaryDirectory
	let url: URL

	init() throws {
		home = try TemporaryDirectory()
		system = try TemporaryDirectory()
		url = home.file("app.plist")
	}

	func write(_ values: [String: Any], to name: String) throws {
		let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
		try data.write(to: system.file(name), options: .atomic)
	}

	@Test func aLockDefeatsTheUsersValueAnArgumentAndTheSystemDefault() throws {
		let name = uniqueKeyName("channel")
		try write([name: "stable", "free": 1], to: "app.locks.plist")
		try write([name: "system"], to: "app.plist")
		try Data("<plist><dict><key>\(name)</key><string>mine</string></dict></plist>".utf8).write(to: url)
		let before = try Data(contentsOf: url)
		let store = Defaults.FileStore.at(url, systemFolders: [system.url])
		store.setArguments([name: "argument"])
		let channel = Defaults.Key<String>(name, default: "", suite: store)
		#expect(Defaults[channel] == "stable")
		#expect(Defaults.isLocked(channel))
		#expect(!Defaults.isLocked(Defaults.Key<Int>("other", default: 0, suite: store)))
		#expect(store.ownValue(forKey: name) as? String == "mine")

		FailureRecorder.start()
		Defaults[channel] = "beta"
		#expect(Defaults[channel] == "stable")
		#expect(FailureRecorder.failures(forKey: name).count == 1)
		Defaults.reset(channel)
		#expect(FailureRecorder.failures(forKey: name).count == 2)
		#expect(throws: Defaults.LockedKeyError.self) { try store.write("beta", forKey: name) }
		do {
			try Defaults.update(channel) { $0 = "beta" }
			Issue.record("the update of a locked key did not throw")
		} catch let error as Defaults.UpdateError {
			#expect(error.kind == .locked)
			#expect(error.message.contains(name))
		}
		#expect(store.flush())
		#expect(try Data(contentsOf: url) == before)
		#expect(Defaults.Snapshot.storedForms(in: store)[name] as? String == "mine")
	}

	@Test func anObserverHearsALockArriveAndGo() async throws {
		let name = uniqueKeyName("level")
		let store = Defaults.FileStore.at(url, systemFolders: [system.url])
		let level = Defaults.Key<Int>(name, default: 1, suite: store)
		Defaults[level] = 2
		let heard = Recorder<Int>()
		let observation = Defaults.observe(level, options: []) { heard.append($0.newValue) }
		defer { observation.invalidate() }
		try write([name: 9], to: "app.locks.plist")
		#expect(await eventually { heard.values.contains(9) })
		#expect(Defaults.isLocked(level))
		try FileManager.default.removeItem(at: system.file("app.locks.plist"))
		#expect(await eventually { heard.values.last == 2 })
		#expect(!Defaults.isLocked(level))
		Defaults[level] = 3
		#expect(Defaults[level] == 3)
	}

	@Test func theLockFileIsNamedAfterTheSettingsFile() {
		#expect(Defaults.FileStore.lockFileName(forFileNamed: "app.plist") == "app.locks.plist")
		#expect(Defaults.FileStore.lockFileName(forFileNamed: "settings") == "settings.locks.plist")
	}
}

/// ``Defaults/layer(of:)``: which layer gives a key its value.
@Suite(.scaledTimeLimit(minutes: 1)) struct LayerOfKeyTests {
	@Test func eachLayerIsNamedWithItsFile() throws {
		let home = try TemporaryDirectory()
		let system = try TemporaryDirectory()
		for (name, values) in [("app.plist", ["system": 1, "locked": 1]), ("app.locks.plist", ["locked": 2])] {
			let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
			try data.write(to: system.file(name))
		}
		let store = Defaults.FileStore.at(home.file("app.plist"), systemFolders: [system.url])
		store.setArguments(["argument": "1"])
		let key = { (name: String) in Defaults.Key<Int>(name, default: 0, suite: store) }
		Defaults[key("stored")] = 3
		let lockFile = SettingsFile(url: system.file("app.locks.plist")).path
		let systemFile = SettingsFile(url: system.file("app.plist")).path
		#expect(Defaults.layer(of: key("locked")) == .locked(file: lockFile))
		#expect(Defaults.layer(of: key("argument")) == .launchArgument)
		#expect(Defaults.layer(of: key("stored")) == .stored)
		#expect(Defaults.layer(of: key("system")) == .system(file: systemFile))
		#expect(Defaults.layer(of: key("nothing")) == .defaultValue)
		let memory = Defaults.InMemoryStore()
		let other = Defaults.Key<Int>("other", default: 0, suite: memory)
		#expect(Defaults.layer(of: other) == .defaultValue)
		Defaults[other] = 1
		#expect(Defaults.layer(of: other) == .stored)
	}
}
