import Foundation
import Testing

@testable import Defaults

/// The two files sync keeps beside a settings file, pinned in `Fixtures/Sync/` as `WireForms.plist` pins what goes
/// to etcd: the state file (`<settings>.plist.sync.json`, `SyncState`) and the change journal
/// (`<settings>.plist.sync.intents`, `ChangeJournal`). Every process of a settings file reads them, whatever version
/// of the package it runs, and a machine updated to a later one reads what the earlier one left: a change to what is
/// written is a change of format.
///
/// The fixtures were written once by this code (`DEFAULTS_RECORD_FIXTURES=1` writes one that is missing) and checked
/// by hand; each test reads a fixture field by field, and checks that this version still writes it byte for byte.
@Suite struct SyncStoredFormFixtureTests {
	static let stateFile = "Sync/StateFile.json"
	static let journal = "Sync/Journal.intents"

	/// The mark of the wire-form fixtures: machine `01 02 … 10`, sequence 812.
	static let mark = SyncedValueCodingTests.fixtureMark

	/// A state with every field set, and a record of each kind: agreed on a value this machine pushed, on a removal
	/// (a tombstone), on a key the remote does not hold, on a remote value that does not decode (the local one kept),
	/// on a value too large for the remote (held locally), and a line settled without a push.
	static func pinnedState() throws -> SyncState {
		var state = SyncState()
		state.format = 2
		state.machine = Data(1...16)
		state.revision = 4711
		state.records = [
			"theme": .init(value: try SyncedValueCoding.pushedBytes(of: "dark", mark: mark), modRevision: 4700),
			"font": .init(value: SyncedValueCoding.tombstone, modRevision: 4690),
			"token": .init(value: nil, modRevision: 0),
			"layout": .init(
				value: Data("not a property list".utf8), modRevision: 4650,
				keptLocalValue: try SyncedValueCoding.encode("grid"), isUnreadable: true),
			"notes": .init(
				value: try SyncedValueCoding.encode("short"), modRevision: 4600,
				keptLocalValue: try SyncedValueCoding.pushedBytes(
					of: "long", mark: .init(machine: Data(1...16), sequence: 813)),
				isHeldLocally: true, settledWithoutPush: 813),
			"volume": .init(value: try SyncedValueCoding.encode(7), modRevision: 4705, settledWithoutPush: 814),
		]
		state.settled = ["theme": 812, "notes": 813, "volume": 814]
		state.epoch = String(decoding: SyncWorker.newEpoch(id: Data(17...32)), as: UTF8.self)
		state.prefix = "/team/editor/"
		state.sequencesReserved = 2048
		return state
	}

	/// The journal's lines: a line with no name that carries the sequence on (a journal made anew after a block of
	/// reserved sequences), writes of keys by two processes, a line with no name that only took a sequence (an atomic
	/// update's mark), and a name with a quote and a non-ASCII letter, which the direct reading leaves to the decoder.
	static let pinnedLines: [ChangeJournal.Line] = [
		.init(s: 2048, k: nil, p: nil),
		.init(s: 2049, k: "theme", p: 4711),
		.init(s: 2050, k: "font", p: 4711),
		.init(s: 2051, k: nil, p: 4712),
		.init(s: 2052, k: "théme \"b\"", p: 4712),
		.init(s: 2053, k: "theme", p: 4712),
	]

	/// Writes a missing fixture when recording; then the fixture's bytes.
	private static func pinnedBytes(_ path: String, writtenNow: Data) throws -> Data {
		if Fixtures.isRecording, !FileManager.default.fileExists(atPath: Fixtures.url(path).path) {
			try writtenNow.write(to: Fixtures.url(path))
		}
		return try Data(contentsOf: Fixtures.url(path))
	}

	@Test func theStateFileIsWrittenAsPinned() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("app.plist.sync.json")
		#expect(try Self.pinnedState().save(to: url))
		let written = try Data(contentsOf: url)
		let pinned = try Self.pinnedBytes(Self.stateFile, writtenNow: written)
		#expect(written == pinned, "\(String(decoding: written, as: UTF8.self))")
	}

	@Test func thePinnedStateFileReadsFieldByField() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("app.plist.sync.json")
		try FileManager.default.copyItem(at: Fixtures.url(Self.stateFile), to: url)
		let state = try #require(SyncState.load(from: url, hadState: true).state, "the pinned state file reads")

		#expect(state.format == 2)
		#expect(state.machine == Data(1...16))
		#expect(state.revision == 4711)
		#expect(state.settled == ["theme": 812, "notes": 813, "volume": 814])
		#expect(state.epoch == "1112131415161718191a1b1c1d1e1f20")
		#expect(state.prefix == "/team/editor/")
		#expect(state.sequencesReserved == 2048)
		#expect(Set(state.records.keys) == ["theme", "font", "token", "layout", "notes", "volume"])

		let theme = try #require(state.records["theme"])
		guard case .value(let value, let mark) = SyncedValueCoding.contents(of: try #require(theme.value)) else {
			Issue.record("the agreed value of theme does not decode")
			return
		}
		#expect(value as? String == "dark" && mark == Self.mark)
		#expect(theme.modRevision == 4700)
		#expect(theme.keptLocalValue == nil && !theme.isUnreadable && theme.isHeldLocally == nil)
		#expect(theme.settledWithoutPush == nil)

		let font = try #require(state.records["font"])
		#expect(font.value == Data() && SyncedValueCoding.isRemoval(font.value))
		#expect(font.modRevision == 4690 && font.expectedModRevision == 4690)

		let token = try #require(state.records["token"])
		#expect(token.value == nil && token.modRevision == 0 && token.expectedModRevision == 0)

		let layout = try #require(state.records["layout"])
		#expect(layout.value == Data("not a property list".utf8) && layout.modRevision == 4650)
		#expect(layout.isUnreadable && layout.isHeldLocally == nil)
		#expect(SyncedValueCoding.decode(try #require(layout.keptLocalValue)) as? String == "grid")
		#expect(state.agreedLocalValue(forKey: "layout") as? String == "grid")

		let notes = try #require(state.records["notes"])
		#expect(SyncedValueCoding.decode(try #require(notes.value)) as? String == "short")
		#expect(notes.modRevision == 4600 && notes.isHeldLocally == true && !notes.isUnreadable)
		#expect(notes.settledWithoutPush == 813)
		#expect(state.agreedLocalValue(forKey: "notes") as? String == "long")

		let volume = try #require(state.records["volume"])
		#expect(SyncedValueCoding.decode(try #require(volume.value)) as? Int == 7)
		#expect(volume.modRevision == 4705 && volume.settledWithoutPush == 814)
		#expect(volume.keptLocalValue == nil && !volume.isUnreadable && volume.isHeldLocally == nil)

		#expect(state == (try Self.pinnedState()))
	}

	@Test func theJournalIsWrittenAsPinned() throws {
		let folder = try TemporaryDirectory()
		let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: folder.file("app.plist")))
		#expect(journal.replace(with: Self.pinnedLines) == nil)
		let written = try Data(contentsOf: folder.file("app.plist.sync.intents"))
		let pinned = try Self.pinnedBytes(Self.journal, writtenNow: written)
		#expect(written == pinned, "\(String(decoding: written, as: UTF8.self))")
		// An append writes its lines in the same form: the next sequence, the name, this process's id.
		guard case .success(let appended) = journal.append(["volume"]) else {
			Issue.record("no line was appended")
			return
		}
		let line = ChangeJournal.Line(s: 2054, k: "volume", p: getpid())
		#expect(appended == [line])
		let appendedBytes = try Data(contentsOf: folder.file("app.plist.sync.intents")).dropFirst(pinned.count)
		#expect(String(decoding: appendedBytes, as: UTF8.self) == #"{"k":"volume","p":\#(getpid()),"s":2054}"# + "\n")
	}

	@Test func thePinnedJournalReadsLineByLine() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("app.plist.sync.intents")
		try FileManager.default.copyItem(at: Fixtures.url(Self.journal), to: url)
		let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: folder.file("app.plist")))
		guard case .lines(let lines) = journal.read() else {
			Issue.record("the pinned journal does not read")
			return
		}
		#expect(lines.map(\.s) == [2048, 2049, 2050, 2051, 2052, 2053])
		#expect(lines.map(\.k) == [nil, "theme", "font", nil, "théme \"b\"", "theme"])
		#expect(lines.map(\.p) == [nil, 4711, 4711, 4712, 4712, 4712])
		guard case .lines(let latest) = journal.read(latestOnly: true) else {
			Issue.record("the pinned journal does not read its latest lines")
			return
		}
		#expect(latest == [Self.pinnedLines[2], Self.pinnedLines[4], Self.pinnedLines[5]])

		// With the pinned state: keys with a line above their settled sequence wait to be pushed.
		let state = try Self.pinnedState()
		#expect(
			state.pending(in: lines, among: ["theme", "font", "théme \"b\"", "volume"]) == [
				"theme": 2053, "font": 2050, "théme \"b\"": 2052,
			])

		// A last line without its newline is an append a crash cut short: it is not read.
		let handle = try FileHandle(forWritingTo: url)
		try handle.seekToEnd()
		try handle.write(contentsOf: Data(#"{"k":"volume","p":4713,"s":2054"#.utf8))
		try handle.close()
		guard case .lines(let cut) = journal.read() else {
			Issue.record("the journal with a line cut short does not read")
			return
		}
		#expect(cut == Self.pinnedLines)
	}

	// MARK: The first form

	static let firstFormStateFile = "Sync/StateFileFirstForm.json"
	static let firstFormQueue = "Sync/StateFileFirstForm.queue.json"

	/// The first form of the state file, which versions before the journal of intent (issue 28) wrote and this one
	/// migrates (`SyncState.migrate`, `migrateIfNeeded`): no `format`, `machine` nor `settled`, a record's pushes
	/// whose replies were lost (`unconfirmedPushes`, which this version no longer reads), version-1 values, and the
	/// keys waiting to be pushed in a queue file beside it (`<state>.queue.json`: the engine's `names`, and the
	/// names `defaults` recorded, `recordedElsewhere`). The two fixtures were written by the first form's own code,
	/// not by this one: its `SyncState`, `SyncQueue` and `BinaryPropertyList` as they were at 1377f84^ (the commit
	/// before the journal), compiled on their own, the state encoded as its `save` did (`JSONEncoder` with its
	/// default options, whose key order is not sorted) and the queue as its `changeLocked` did (sorted keys); its
	/// version-1 bytes of "world" are those `WireForms.plist` pins.
	@Test func thePinnedFirstFormStateFileReadsFieldByField() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("app.plist.sync.json")
		try FileManager.default.copyItem(at: Fixtures.url(Self.firstFormStateFile), to: url)
		var state = try #require(SyncState.load(from: url, hadState: true).state, "the first form reads")

		#expect(state.format == nil && state.machine == nil && state.settled == nil)
		#expect(state.epoch == nil && state.prefix == nil && state.sequencesReserved == nil)
		#expect(state.revision == 4711)
		#expect(Set(state.records.keys) == ["theme", "font", "token", "layout", "notes", "volume"])

		// Version-1 values, byte for byte what this version writes for version 1, with no mark.
		let theme = try #require(state.records["theme"])
		#expect(theme.value == (try SyncedValueCoding.encode("dark")) && theme.modRevision == 4700)
		#expect(SyncedValueCoding.mark(of: theme.value) == nil)
		#expect(theme.keptLocalValue == nil && !theme.isUnreadable && theme.isHeldLocally == nil)
		#expect(theme.settledWithoutPush == nil)

		let font = try #require(state.records["font"])
		#expect(
			font.value == SyncedValueCoding.tombstone && font.modRevision == 4690 && font.expectedModRevision == 4690)

		let token = try #require(state.records["token"])
		#expect(token.value == nil && token.modRevision == 0 && token.expectedModRevision == 0)

		let layout = try #require(state.records["layout"])
		#expect(layout.value == Data("not a property list".utf8) && layout.modRevision == 4650)
		#expect(layout.isUnreadable && layout.isHeldLocally == nil)
		#expect(state.agreedLocalValue(forKey: "layout") as? String == "grid")

		// Held locally as too large: not a put-back, which the first form did not make (no mark, no sequence 0).
		let notes = try #require(state.records["notes"])
		#expect(SyncedValueCoding.decode(try #require(notes.value)) as? String == "short")
		#expect(notes.modRevision == 4600 && notes.isHeldLocally == true && !notes.isPutBack)
		#expect(state.agreedLocalValue(forKey: "notes") as? String == "long")

		// Its unconfirmed pushes are not read: the record is the agreed value and revision alone.
		#expect(state.records["volume"] == .init(value: try SyncedValueCoding.encode(7), modRevision: 4705))

		// Migrated: a machine id, nothing settled, and the names of the queue file (the engine's and those
		// `defaults` recorded), which the engine records in the journal; the records stay as they were.
		try FileManager.default.copyItem(
			at: Fixtures.url(Self.firstFormQueue), to: folder.file("app.plist.sync.queue.json"))
		let records = state.records
		#expect(state.migrate(besideStateFile: url) == ["font", "theme", "volume"])
		#expect(state.format == SyncState.currentFormat && state.machine?.count == 16 && state.settled == [:])
		#expect(state.records == records && state.revision == 4711)
	}

	/// An engine finds the pinned first form beside a settings file and migrates it at its first step under the
	/// file's lock, before anything reaches the remote (here, one that does not answer): the queue's names become
	/// journal lines, pending to be pushed as this machine's changes, the queue file is removed, and the state is
	/// written in the current form with a machine id, its prefix, and the records and revision it had.
	@Test(.scaledTimeLimit(minutes: 1)) func anEngineMigratesThePinnedFirstForm() async throws {
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let stateFile = folder.file("app.plist.sync.json")
		let queueFile = folder.file("app.plist.sync.queue.json")
		try FileManager.default.copyItem(at: Fixtures.url(Self.firstFormStateFile), to: stateFile)
		try FileManager.default.copyItem(at: Fixtures.url(Self.firstFormQueue), to: queueFile)
		let firstForm = try #require(SyncState.load(from: stateFile).state)
		// What the first form left in the settings file: the queued changes made (`font` removed by `defaults`).
		try PropertyListSerialization.data(
			fromPropertyList: ["theme": "light", "volume": 9, "layout": "grid", "notes": "long"], format: .xml,
			options: 0
		).write(to: settings)

		var failures: [Defaults.Failure] = []
		let store = Defaults.FileStore(file: SettingsFile(url: settings), failures: &failures)
		let remote = UnreachableRemote()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/team/editor/", store: store)
		engine.add(["theme", "font", "token", "layout", "notes", "volume"])
		defer { engine.stop() }
		#expect(await engine.synchronize() == false, "the remote does not answer")

		#expect(!FileManager.default.fileExists(atPath: queueFile.path), "the queue file is removed")
		let migrated = try #require(SyncState.load(from: stateFile).state)
		#expect(migrated.format == SyncState.currentFormat && migrated.machine?.count == 16)
		#expect(migrated.prefix == "/team/editor/" && migrated.revision == 4711)
		#expect(migrated.records == firstForm.records)
		let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: settings))
		guard case .lines(let lines) = journal.read() else {
			Issue.record("no journal after the migration")
			return
		}
		#expect(Set(lines.compactMap(\.k)) == ["font", "theme", "volume"], "\(lines)")
		#expect(
			migrated.pending(in: lines, among: engine.names).keys.sorted() == ["font", "theme", "volume"])
		#expect(engine.status.pendingCount == 3)
		#expect(remote.writes.load(ordering: .relaxed) == 0)
	}
}
