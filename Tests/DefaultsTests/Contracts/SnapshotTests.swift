import Defaults
import DefaultsTestSupport
import Foundation
import Testing

extension Defaults.Keys {
	fileprivate static let window = Key<Window>("window", default: Window(width: 800, height: 600, title: ""))
	fileprivate static let mime = Key<Mime>("mime", default: .text)
	fileprivate static let recent = Key<[String]>("recent", default: [])
}

/// The example of `Defaults.Snapshot`'s documentation and of the DocC article StableStoredForms.md, as a real test: an app pins
/// the stored forms of its settings.
@Test func settingsKeepTheirStoredForms() throws {
	let store = Defaults.InMemoryStore()
	store[.window] = Window(width: 640, height: 480, title: "Main")
	store[.mime] = .json
	store[.recent] = ["a.txt", "b.txt"]
	let keys: [Defaults.Keys] = [.window, .mime, .recent]

	let snapshot = Fixtures.url("Snapshots/Settings.plist")
	if ProcessInfo.processInfo.environment["RECORD_SNAPSHOTS"] == "1" {
		try Defaults.Snapshot.write(of: store, keys: keys, to: snapshot)
	}
	try Defaults.Snapshot.verify(store, against: snapshot, keys: keys)
}

/// The committed fixture records the keys it was written for (`Defaults.Snapshot.keys`), as every snapshot written
/// now does: verified without naming keys, a key the app stores beside them (a migration's version) is no difference.
@Test func theCommittedSnapshotNamesItsKeys() throws {
	let store = Defaults.InMemoryStore()
	store[.window] = Window(width: 640, height: 480, title: "Main")
	store[.mime] = .json
	store[.recent] = ["a.txt", "b.txt"]
	try store.write(3, forKey: "DefaultsMigrationVersion")
	try Defaults.Snapshot.verify(store, against: Fixtures.url("Snapshots/Settings.plist"))
}

/// A snapshot written for some keys is checked on those keys when `verify` names none: other keys of the store (a
/// migration's version, a key added later) are not differences.
@Test func aSnapshotOfSomeKeysIsVerifiedOnThoseKeysWhenNoneAreNamed() throws {
	let folder = try TemporaryDirectory()
	let url = folder.file("Some.plist")
	let store = Defaults.InMemoryStore()
	store[.mime] = .json
	try Defaults.Snapshot.write(of: store, keys: [.mime, .recent], to: url)
	try store.write(3, forKey: "DefaultsMigrationVersion")
	try Defaults.Snapshot.verify(store, against: url)
	store[.recent] = ["new"]
	#expect(throws: Defaults.Snapshot.Error.self) { try Defaults.Snapshot.verify(store, against: url) }
}

@Suite struct SnapshotTests {
	let folder: TemporaryDirectory
	let url: URL

	init() throws {
		folder = try TemporaryDirectory()
		url = folder.file("Settings.plist")
	}

	@Test func aSnapshotIsReadableXMLOfStoredValuesOnly() throws {
		let store = try Defaults.InMemoryStore(values: ["zeta": 1, "alpha": "a", "middle": [true, 2.5]])
		store.registerDefaultValues(["registered": 9])
		try Defaults.Snapshot.write(of: store, to: url)
		let text = try String(contentsOf: url, encoding: .utf8)
		#expect(text.hasPrefix("<?xml"))
		#expect(!text.contains("registered"))
		let positions = ["alpha", "middle", "zeta"].map { text.range(of: "<key>\($0)</key>")!.lowerBound }
		#expect(positions == positions.sorted(), "keys are sorted")
		try Defaults.Snapshot.verify(store, against: url)
	}

	@Test func everyDifferenceIsListedWithBothForms() throws {
		let store = try Defaults.InMemoryStore(values: ["kept": 1, "changed": "\"alpha\"", "removed": true])
		try Defaults.Snapshot.write(of: store, to: url)
		try store.write("alpha", forKey: "changed")
		store.removeValue(forKey: "removed")
		try store.write(3, forKey: "added")

		let differences = try Defaults.Snapshot.differences(in: store, against: url)
		#expect(differences.map(\.key) == ["added", "changed", "removed"])
		#expect(differences.map(\.kind) == [.unexpected, .changed, .missing])
		do {
			try Defaults.Snapshot.verify(store, against: url)
			Issue.record("expected a mismatch")
		} catch {
			#expect(error.fileProblem == nil)
			let message = error.description
			#expect(
				message.contains(
					#"'changed' changed: the snapshot has string "\"alpha\"", the store has string "alpha""#))
			#expect(message.contains("'removed' is missing: the snapshot has boolean true"))
			#expect(message.contains("'added' is not in the snapshot: the store has integer 3"))
		}
	}

	@Test func onlyTheGivenKeysAreWrittenAndChecked() throws {
		let store = try Defaults.InMemoryStore(values: ["mine": 1, "theirs": 2])
		try Defaults.Snapshot.write(of: store, names: ["mine", "absent"], to: url)
		#expect(try Defaults.Snapshot.read(from: url).keys.sorted() == ["mine"])
		try store.write(5, forKey: "theirs")
		try Defaults.Snapshot.verify(store, against: url, names: ["mine", "absent"])
		try store.write(5, forKey: "absent")
		#expect(
			try Defaults.Snapshot.differences(in: store, against: url, names: ["mine", "absent"]).map(\.kind) == [
				.unexpected
			])
	}

	@Test func keyedArchivesCompareByContents() throws {
		let ours = try #require(try Fixtures.dictionary("StoredForms/SecureCoding.plist")["archive"] as? Data)
		let other = try #require(try Fixtures.dictionary("Foreign/KeyedArchives.plist")["bookmark"] as? Data)
		#expect(ours != other, "two archives of the same bookmark, laid out differently")
		#expect(Defaults.Snapshot.isSameStoredForm(ours, other))
		#expect(Defaults.Snapshot.isSameStoredForm([["a": ours]], [["a": other]]))
		let tag = try #require(try Fixtures.dictionary("Foreign/KeyedArchives.plist")["tag"] as? Data)
		#expect(!Defaults.Snapshot.isSameStoredForm(ours, tag))
	}

	@Test func datesCompareToTheSecondThatXMLKeeps() throws {
		let store = Defaults.InMemoryStore()
		try store.write(Date(timeIntervalSinceReferenceDate: 12.75), forKey: "date")
		try Defaults.Snapshot.write(of: store, to: url)
		try Defaults.Snapshot.verify(store, against: url)
		try store.write(Date(timeIntervalSinceReferenceDate: 13.25), forKey: "date")
		#expect(try Defaults.Snapshot.differences(in: store, against: url).map(\.kind) == [.changed])
	}

	@Test func aMissingSnapshotSaysHowToWriteOne() {
		do {
			try Defaults.Snapshot.verify(Defaults.InMemoryStore(), against: url)
			Issue.record("expected a file error")
		} catch {
			#expect(error.fileProblem != nil && error.differences.isEmpty)
			#expect(error.description.contains("Defaults.Snapshot.write"))
		}
	}

	@Test func typedKeysPinTheirStoresForms() throws {
		let store = Defaults.InMemoryStore()
		store[.mime] = .json
		try Defaults.Snapshot.write(of: store, keys: [.mime], to: url)
		#expect(try Defaults.Snapshot.read(from: url)["mime"] as? String == "application/json")
		store[.mime] = .text
		#expect(try Defaults.Snapshot.differences(in: store, against: url, names: [Defaults.Keys.mime.name]).count == 1)
	}
}
