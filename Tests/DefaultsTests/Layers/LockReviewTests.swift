import Foundation
import Testing

@testable import Defaults

/// Locks against the paths that write the user's values without being the app's write: sync's remote values and
/// migrations go beneath the lock; an update sees a lock that lands while it waits; the file a lock came from stays
/// true; observers hear only what changes a read.
@Suite(.scaledTimeLimit(minutes: 1)) struct LockReviewTests {
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

	func write(_ values: [String: Any], to name: String, in folder: TemporaryDirectory? = nil) throws {
		let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
		try data.write(to: (folder ?? first).file(name), options: .atomic)
	}

	func store() -> Defaults.FileStore {
		Defaults.FileStore.at(url, systemFolders: [first.url, second.url])
	}

	/// The sync state records the remote value as applied: the file must hold it, beneath the lock.
	@Test func aRemoteValueOfALockedKeyIsStoredBeneathTheLock() throws {
		let name = uniqueKeyName("channel")
		try write([name: "stable"], to: "app.locks.plist")
		let store = store()
		let channel = Defaults.Key<String>(name, default: "", suite: store)
		FailureRecorder.start()
		let heard = Recorder<String>()
		let observation = Defaults.observe(channel, options: []) { heard.append($0.newValue) }
		defer { observation.invalidate() }
		Defaults.SyncEngine.applyRemoteValue("beta", forKey: name, in: store)
		#expect(Defaults[channel] == "stable")
		#expect(store.ownValue(forKey: name) as? String == "beta")
		#expect(FailureRecorder.failures(forKey: name).isEmpty)
		#expect(store.flush())
		#expect(try FileContents.values(of: url)[name] as? String == "beta")
		Defaults.SyncEngine.applyRemoteValue(nil, forKey: name, in: store)
		#expect(store.ownValue(forKey: name) == nil)
		#expect(store.flush())
		#expect(try FileContents.values(of: url)[name] == nil)
		#expect(heard.values.isEmpty)
	}

	/// A migration moves the user's values: a lock neither stops it nor lets it record its version without its
	/// change, and a locked value with nothing of the user's beneath it is never copied into the file.
	@Test func aMigrationWorksOnTheUsersValuesBeneathLocks() throws {
		let source = uniqueKeyName("source")
		let target = uniqueKeyName("target")
		let removed = uniqueKeyName("removed")
		let custom = uniqueKeyName("custom")
		let lockedOnly = uniqueKeyName("lockedOnly")
		let copy = uniqueKeyName("copy")
		try write(
			[source: "locked", removed: 1, custom: 5, lockedOnly: "administrator's"], to: "app.locks.plist")
		try Data(
			"""
			<plist><dict><key>\(source)</key><string>mine</string><key>\(removed)</key><integer>2</integer>\
			<key>\(custom)</key><integer>3</integer></dict></plist>
			""".utf8
		).write(to: url)
		let store = store()
		#expect(Defaults[Defaults.Key<Int>(custom, default: 0, suite: store)] == 5)
		FailureRecorder.start()
		let seen = Recorder<Int>()
		let reached = try Defaults.migrate(
			[
				.init(version: 1, .rename(from: source, to: target)),
				.init(version: 2, .remove(removed)),
				// A custom step reads the user's value beneath the lock, through the store and through a key.
				.init(version: 3) { store in
					seen.append(store.storedValue(forKey: custom) as? Int ?? 0)
					seen.append(Defaults[Defaults.Key<Int>(custom, default: 0, suite: store)])
					try store.write((store.storedValue(forKey: custom) as? Int ?? 0) + 1, forKey: custom)
				},
				.init(version: 4, .rename(from: lockedOnly, to: copy)),
			], store: store)
		#expect(reached == 4)
		for name in [source, target, removed, custom, lockedOnly, copy] {
			#expect(FailureRecorder.failures(forKey: name).isEmpty)
		}
		#expect(store.flush())
		#expect(
			try FileContents.values(of: url) as NSDictionary
				== [target: "mine", custom: 4, Defaults.Migration.versionKey: 4] as NSDictionary)
		#expect(Defaults[Defaults.Key<String>(source, default: "", suite: store)] == "locked")
		#expect(Defaults[Defaults.Key<Int>(removed, default: 0, suite: store)] == 1)
		#expect(seen.values == [3, 3])
		// No key remembered what the migration read: other reads see the lock.
		#expect(Defaults[Defaults.Key<Int>(custom, default: 0, suite: store)] == 5)
		#expect(store.storedValue(forKey: custom) as? Int == 5)
		// Outside a migration the lock refuses as before.
		#expect(throws: Defaults.LockedKeyError.self) { try store.write(6, forKey: custom) }
	}

	/// A migration's custom step reads the user's own values only: a system-wide default it read and wrote back would
	/// pin the administrator's value in the user's file, where a later change of the system file no longer reaches.
	@Test func aMigrationStepDoesNotReadSystemDefaultsAsTheUsersValues() throws {
		let name = uniqueKeyName("pageSize")
		try write([name: 50], to: "app.plist")
		let store = store()
		let pageSize = Defaults.Key<Int>(name, default: 10, suite: store)
		#expect(Defaults[pageSize] == 50)
		let seen = Recorder<String>()
		let reached = try Defaults.migrate(
			[
				.init(version: 1) { store in
					seen.append("\(store.storedValue(forKey: name) as? Int ?? -1)")
					if let value = store.storedValue(forKey: name) as? Int {
						try store.write(value * 2, forKey: name)
					}
				}
			], store: store)
		#expect(reached == 1)
		#expect(seen.values == ["-1"])
		#expect(store.flush())
		#expect(try FileContents.values(of: url)[name] == nil)
		// Outside the migration the key reads the system default again.
		#expect(Defaults[pageSize] == 50)
		#expect(store.storedValue(forKey: name) as? Int == 50)
	}

	/// The file a lock names follows the lock when it moves to the first folder with the same value.
	@Test func aLockThatMovesBetweenFoldersUnchangedNamesItsNewFile() throws {
		let name = uniqueKeyName("level")
		try write([name: 1], to: "app.locks.plist", in: second)
		let store = store()
		let level = Defaults.Key<Int>(name, default: 0, suite: store)
		let secondFile = SettingsFile(url: second.file("app.locks.plist")).path
		let firstFile = SettingsFile(url: first.file("app.locks.plist")).path
		#expect(Defaults.layer(of: level) == .locked(file: secondFile))
		try write([name: 1], to: "app.locks.plist", in: first)
		store.reloadSystemLayer()
		#expect(Defaults.layer(of: level) == .locked(file: firstFile))
		#expect(store.lockFile(ofKey: name) == firstFile)
		do {
			try store.write(2, forKey: name)
			Issue.record("the write of a locked key did not throw")
		} catch let error as Defaults.LockedKeyError {
			#expect(error.lockFile == firstFile)
		}
	}

	/// An update that waits for the store while the administrator's lock arrives must see the lock: the check is made
	/// under the lock the write takes, never before it.
	@Test func aLockThatArrivesWhileAnUpdateWaitsRefusesTheUpdate() throws {
		let name = uniqueKeyName("channel")
		let store = store()
		let channel = Defaults.Key<String>(name, default: "stable", suite: store)
		let other = Defaults.Key<Int>(uniqueKeyName("other"), default: 0, suite: store)
		let outcome = LockedState<Result<String, any Error>?>(nil)
		let finished = DispatchSemaphore(value: 0)
		try Defaults.update(other) { value in
			value += 1
			// Holds the store: the second update waits for it, past any check made before it.
			Thread.detachNewThread {
				outcome.withLock { $0 = Result { try Defaults.update(channel) { $0 = "beta" } } }
				finished.signal()
			}
			// Gives the waiting update time to reach the store; the outcome must not depend on it.
			Thread.sleep(forTimeInterval: 0.2)
			// What a reload of the locks installs, here while the store is held.
			store.memory.withLock { memory in
				memory.locked[name] = "stable"
				memory.lockedBy[name] = "/etc/xdg/app.locks.plist"
				memory.foldAbove()
			}
		}
		#expect(finished.wait(timeout: .now() + .seconds(30 * sanitizerSlowdown)) == .success)
		switch outcome.withLock({ $0 }) {
		case .failure(let error as Defaults.UpdateError):
			#expect(error.kind == .locked)
		default:
			Issue.record("the update of a key locked while it waited was not refused")
		}
		#expect(store.ownValue(forKey: name) == nil)
		#expect(store.flush())
		#expect(try FileContents.values(of: url)[name] == nil)
	}

	/// An update of stored forms (the `defaults` command's) refuses a locked key it would change, under the update's
	/// lock: the file never takes a value memory refuses.
	@Test func anUpdateOfStoredFormsRefusesALockedKey() throws {
		let name = uniqueKeyName("channel")
		try write([name: "stable"], to: "app.locks.plist")
		let store = store()
		do {
			try store.updateStoredValues([name]) { $0[name] = "beta" }
			Issue.record("the update of a locked key did not throw")
		} catch let error as Defaults.UpdateError {
			#expect(error.kind == .locked)
		}
		#expect(store.ownValue(forKey: name) == nil)
		let inFile = FileManager.default.fileExists(atPath: url.path) ? try FileContents.values(of: url)[name] : nil
		#expect(inFile == nil)
		// Unchanged, a locked key is no write to refuse.
		try store.updateStoredValues([name]) { _ in }
	}

	/// A change of the user's value beneath a lock changes nothing a read sees: its observers hear nothing, while the
	/// same reload's change of another key is heard.
	@Test func aChangeBeneathALockIsNotHeard() async throws {
		let base = uniqueKeyName("key")
		let locked = Defaults.Key<Int>(base + "a", default: 0, suite: store())
		let free = Defaults.Key<Int>(base + "b", default: 0, suite: store())
		try write([locked.name: 1], to: "app.locks.plist")
		store().reloadSystemLayer()
		#expect(Defaults[locked] == 1)
		let heardLocked = Recorder<Int>()
		let heardFree = Recorder<Int>()
		let observations = [
			Defaults.observe(locked, options: []) { heardLocked.append($0.newValue) },
			Defaults.observe(free, options: []) { heardFree.append($0.newValue) },
		]
		defer { observations.forEach { $0.invalidate() } }
		// Another process's write: both keys change in the file, in one reload, the locked one delivered first.
		let data = try PropertyListSerialization.data(
			fromPropertyList: [locked.name: 7, free.name: 8], format: .xml, options: 0)
		try data.write(to: url, options: .atomic)
		#expect(await eventually { heardFree.values == [8] })
		#expect(heardLocked.values.isEmpty)
		#expect(store().ownValue(forKey: locked.name) as? Int == 7)
	}
}
