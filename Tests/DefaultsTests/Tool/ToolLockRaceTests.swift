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
}
