import Foundation
import Testing

@testable import Defaults
@testable import DefaultsToolCore

/// A lock that lands after a writing verb checked the locks: the store the verb opens reads the locks files, and its
/// update checks them under the file's lock, as the library's `update` does; the verb then refuses as its own check
/// would have, with the locked status, and writes nothing.
@Suite(.scaledTimeLimit(minutes: 1)) struct ToolLockRaceTests {
	@Test func aLockTheStoreSeesUnderTheFilesLockRefusesTheWriteWithTheLockedStatus() throws {
		let home = try TemporaryDirectory()
		let system = try TemporaryDirectory()
		let url = home.file("app.plist")
		let domain = try Domain(.file(url.path), verb: "write")
		// The verb's own check found no lock; the administrator's lock lands before the store is opened.
		try PropertyListSerialization.data(fromPropertyList: ["channel": "stable"], format: .xml, options: 0)
			.write(to: system.file("app.locks.plist"))
		let store = Defaults.FileStore.at(url, systemFolders: [system.url])
		do {
			try domain.update("channel", in: store) { values in
				values["channel"] = "beta"
			} otherError: { error in
				.badValue("The value cannot be stored: \(error).")
			}
			Issue.record("the write of a locked key was not refused")
		} catch {
			#expect(error.status == .locked, "\(error.message)")
			#expect(error.message.contains("locked by the administrator"), "\(error.message)")
		}
		#expect(store.ownValue(forKey: "channel") == nil)
		#expect(!FileManager.default.fileExists(atPath: url.path))
	}

	/// Each verb that edits the user's file in one step, run in this process while a lock lands after its own check:
	/// the store it opens (registered here beforehand) reads the new locks file, so the verb's check finds no lock and
	/// the store's, under the file's lock, does. Before this, `delete` and `import` exited 74 (the store dropped the
	/// refused removal and the flush reported it) and `rename` 65, with the unlocked half of a rename written.
	@Test(arguments: [
		["delete", "{file}", "channel"], ["delete", "{file}"], ["rename", "{file}", "other", "channel"],
		["rename", "{file}", "channel", "moved"], ["import", "{file}", "{input}"],
	])
	func aLockThatLandsAfterTheVerbsCheckRefusesTheWholeEditWithTheLockedStatus(arguments: [String]) throws {
		let home = try TemporaryDirectory()
		let system = try TemporaryDirectory()
		let url = home.file("app.plist")
		let original = try PropertyListSerialization.data(
			fromPropertyList: ["channel": "stable", "other": 1], format: .xml, options: 0)
		try original.write(to: url)
		let input = home.file("input.plist")
		try PropertyListSerialization.data(fromPropertyList: ["channel": "beta", "other": 2], format: .xml, options: 0)
			.write(to: input)
		try PropertyListSerialization.data(fromPropertyList: ["channel": "stable"], format: .xml, options: 0)
			.write(to: system.file("app.locks.plist"))
		_ = Defaults.FileStore.at(url, systemFolders: [system.url])
		defer { ChangeGuard.end() }
		let tokens = arguments.map { $0 == "{file}" ? url.path : $0 == "{input}" ? input.path : $0 }
		#expect(Tool.run(tokens) == .locked, "\(tokens)")
		#expect(try Data(contentsOf: url) == original, "\(tokens) changed the file")
	}

	/// `rename` moves the value the file holds when the update has its lock: a value another process wrote just before
	/// the verb runs, while this process's store had read the old one, is what moves. (This does not reach the window
	/// the verb once had between opening the store and its update, where it took the value from memory; the store
	/// sees the replaced file before the verb reads it. The verb now takes the value inside the update only.)
	@Test func aRenameMovesTheValueTheFileHoldsUnderItsLock() throws {
		let home = try TemporaryDirectory()
		let url = home.file("app.plist")
		try PropertyListSerialization.data(fromPropertyList: ["old": "A"], format: .xml, options: 0).write(to: url)
		let store = Defaults.FileStore.at(url)
		#expect(store.storedValue(forKey: "old") as? String == "A")
		try PropertyListSerialization.data(fromPropertyList: ["old": "B"], format: .xml, options: 0)
			.write(to: url, options: .atomic)
		defer { ChangeGuard.end() }
		#expect(Tool.run(["rename", url.path, "old", "new"]) == .success)
		let data = try Data(contentsOf: url)
		let values = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
		#expect(values?["new"] as? String == "B", "\(values ?? [:])")
		#expect(values?["old"] == nil, "\(values ?? [:])")
	}
}
