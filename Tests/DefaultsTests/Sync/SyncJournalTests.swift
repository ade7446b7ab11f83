import DefaultsEtcd
import Foundation
import Testing

@testable import Defaults

/// The journal of intent (issue 28) with an engine and a real etcd: what is pushed is what was recorded.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncJournalTests {
	typealias Edge = SyncSettingsFileEdgeTests

	/// A state file of the first form (no format, no machine, no settled sequences) and its queue file, read by this
	/// version: the queued key is pushed as an edit, a key that differs from the agreement with no record is not
	/// (it is put back), and the state is rewritten in format 2 with a machine id, the queue file removed.
	@Test func aFirstFormStateAndItsQueueAreMigrated() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("migrate"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let stateFile = folder.file("app.plist.sync.json")
		do {
			let store = try Edge.freshStore(at: settings)
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["a", "b"])
			try store.write("1", forKey: "a")
			try store.write("1", forKey: "b")
			#expect(await engine.synchronize())
			#expect(store.flush())
		}
		// As the first form left them: the state without what format 2 added, a queue naming `a`, no journal; and
		// both keys changed in the settings file while nothing ran.
		var state = try #require(
			try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any])
		state["format"] = nil
		state["machine"] = nil
		state["settled"] = nil
		try JSONSerialization.data(withJSONObject: state).write(to: stateFile)
		try Data(#"{"names":["a"]}"#.utf8).write(to: folder.file("app.plist.sync.queue.json"))
		try FileManager.default.removeItem(at: folder.file("app.plist.sync.intents"))
		try PropertyListSerialization.data(fromPropertyList: ["a": "2", "b": "2"], format: .xml, options: 0)
			.write(to: settings)

		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["a", "b"])
		#expect(await engine.synchronize())
		#expect(try await Edge.value(of: prefix + "a", in: remote) == "2", "the queued edit went out")
		#expect(try await Edge.value(of: prefix + "b", in: remote) == "1", "the unrecorded change stayed local")
		#expect(store.storedValue(forKey: "b") as? String == "1", "and was put back")
		guard case .state(let migrated) = SyncState.load(from: stateFile) else {
			Issue.record("no state after the migration")
			return
		}
		#expect(migrated.format == 2 && migrated.machine?.count == 16)
		#expect(!FileManager.default.fileExists(atPath: folder.file("app.plist.sync.queue.json").path))
	}

	/// The temporary files of the state and the journal that a process killed while writing them (SIGKILL) left are
	/// removed at the next start, under the settings file's lock: both are written only under it, so every such file
	/// found then is stale. Before issue 28 only the settings file's own were removed.
	@Test func staleTemporaryFilesOfTheSyncFilesAreRemovedAtTheNextStart() throws {
		let folder = try TemporaryDirectory()
		let stale = [".app.plist.sync.json.tmp-99999-1", ".app.plist.sync.intents.tmp-99999-2"].map(folder.file)
		for file in stale {
			try Data("{".utf8).write(to: file)
		}
		let kept = folder.file(".app.plist.sync.json.notes")
		try Data("{".utf8).write(to: kept)
		let store = try Edge.freshStore(at: folder.file("app.plist"))
		let engine = Defaults.SyncEngine(
			remote: try EtcdClient(endpoints: ["http://127.0.0.1:9"]), prefix: "/test/stale/", store: store)
		engine.add(["a"])
		for file in stale {
			#expect(!FileManager.default.fileExists(atPath: file.path), "\(file.lastPathComponent) is left")
		}
		#expect(FileManager.default.fileExists(atPath: kept.path))
	}

	/// Section 4's rule while the engine runs: an editor changes a synced key in the settings file (no journal
	/// line). The store takes the change in, the engine wakes, and nothing is pushed; the next full read puts the
	/// synced value back and names the key.
	@Test func anEditorsEditOfASyncedKeyIsNotPushed() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("editor"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["level"])
		try store.write("1", forKey: "level")
		#expect(await engine.synchronize())
		engine.start()
		defer { engine.stop() }

		try PropertyListSerialization.data(fromPropertyList: ["level": "edited"], format: .xml, options: 0)
			.write(to: settings)
		let deadline = ContinuousClock.now + .seconds(10)
		while store.storedValue(forKey: "level") as? String != "edited", ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		#expect(store.storedValue(forKey: "level") as? String == "edited", "the store took the edit in")
		#expect(await engine.synchronize())
		#expect(try await Edge.value(of: prefix + "level", in: remote) == "1")
		#expect(store.storedValue(forKey: "level") as? String == "1")
		#expect(!FailureRecorder.failures(mentioning: "level").isEmpty)
	}

	/// A store without a settings file keeps its journal in memory, and its state file outlives the process: a new
	/// run's lines start after the sequences the state already settled, so its first write is not taken for a
	/// settled one (before that, the second run's first write of a key was never pushed).
	@Test func aNewRunOfAnInMemoryStoreWithAStateFilePushesItsWrites() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("memory-runs"))/"
		let folder = try TemporaryDirectory()
		let stateFile = folder.file("sync.json")
		for value in ["1", "2"] {
			let store = Defaults.InMemoryStore()
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store, stateFile: stateFile)
			engine.add(["level"])
			#expect(await engine.synchronize())
			try store.write(value, forKey: "level")
			#expect(await engine.synchronize())
			#expect(try await Edge.value(of: prefix + "level", in: remote) == value)
		}
	}

	/// A key written while no engine of the process synced it (recorded, as every key is, and compacted away), synced
	/// later: its first full read finds the remote without it and pushes the local value.
	@Test func aKeyWrittenBeforeItIsSyncedGoesOutAtItsFirstRead() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("later"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["a"])
		try store.write("1", forKey: "a")
		#expect(await engine.synchronize())
		try store.write("local", forKey: "b")
		#expect(store.flush())
		#expect(await engine.synchronize(), "a step that compacts the journal")
		engine.add(["b"])
		#expect(await engine.synchronize())
		#expect(try await Edge.value(of: prefix + "b", in: remote) == "local")
	}

	/// Lines the engine reads only the latest of still go at compaction: here those of a key the state keeps a record
	/// of but no process syncs any longer, whose unsettled last line stays (another process might push it). Before,
	/// the latest lines equalled what compaction keeps, so the journal was never rewritten and grew with every write.
	@Test func aKeyNoLongerSyncedDoesNotGrowTheJournal() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("unsynced"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["a", "x"])
		try store.write("1", forKey: "a")
		try store.write("1", forKey: "x")
		#expect(store.flush())
		#expect(await engine.synchronize())
		engine.remove(["x"])
		for index in 0..<50 {
			try store.write("\(index)", forKey: "x")
			#expect(store.flush())
		}
		#expect(await engine.synchronize())
		guard case .lines(let lines) = ChangeJournal(besideSettingsFile: SettingsFile(url: settings)).read() else {
			Issue.record("no journal")
			return
		}
		#expect(lines.count <= 2, "\(lines)")
		#expect(lines.last?.k == "x" || lines.last?.k == nil, "\(lines)")
	}

	/// The journal is deleted while a push is in doubt (etcd committed it, its reply was lost), and the step that
	/// makes it again is the full read that meets the push. The push's sequence is above every settled one but within
	/// the state's reservation: it is this machine's own. Before the fix that step had no line to know the issued
	/// sequences by, took the push for one of another machine holding a copy of the state, said so and took a new id.
	@Test func aJournalDeletedWhileAPushIsInDoubtDoesNotMakeItsEchoAnotherMachines() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let client = try EtcdClient(endpoints: [etcd.endpoint])
		let remote = LosingFirstReply(client)
		let prefix = "/test/\(uniqueKeyName("deleted-journal"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let stateFile = folder.file("app.plist.sync.json")
		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["level"])
		#expect(await engine.synchronize())
		try store.write("one", forKey: "level")
		#expect(store.flush())
		remote.losesNextReply.store(true, ordering: .relaxed)
		#expect(await engine.synchronize() == false)
		#expect(try await Edge.value(of: prefix + "level", in: client) == "one")
		guard case .state(let before) = SyncState.load(from: stateFile) else {
			Issue.record("no state")
			return
		}

		remote.removesBeforeNextRead.withLock { $0 = folder.file("app.plist.sync.intents") }
		#expect(await engine.synchronize())
		#expect(remote.removesBeforeNextRead.withLock { $0 } == nil, "the journal was removed before the read")
		#expect(FailureRecorder.failures(mentioning: prefix).filter { $0.message.contains("copy") }.isEmpty)
		guard case .state(let after) = SyncState.load(from: stateFile) else {
			Issue.record("no state")
			return
		}
		#expect(after.machine == before.machine, "the machine kept its id")
		#expect(store.storedValue(forKey: "level") as? String == "one")
		#expect(FileManager.default.fileExists(atPath: folder.file("app.plist.sync.intents").path))
	}

	/// A journal larger than a whole read takes (64 MiB, a tool writing in a loop while sync was stopped) is read,
	/// its pending line pushed, and the journal emptied down to its last sequence.
	@Test func aJournalLargerThanAWholeReadIsPushedAndCompacted() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("long"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: settings))
		do {
			let store = try Edge.freshStore(at: settings)
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["a"])
			try store.write("1", forKey: "a")
			#expect(await engine.synchronize())
		}
		// Another process's lines of an unsynced key, 1 MiB each, then its write of the synced one.
		let handle = try FileHandle(forWritingTo: URL(filePath: journal.file.path))
		try handle.seekToEnd()
		let filler = Data(String(repeating: "f", count: 1 << 20).utf8)
		for _ in 0..<65 {
			try handle.write(contentsOf: Data(#"{"k":""#.utf8) + filler + Data(#"","p":1,"s":1000}"#.utf8 + [0x0A]))
		}
		try handle.close()
		let writer = try Edge.freshStore(at: settings)
		try writer.write("2", forKey: "a")
		#expect(writer.flush())

		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["a"])
		#expect(await engine.synchronize())
		#expect(try await Edge.value(of: prefix + "a", in: remote) == "2")
		guard case .lines(let lines) = journal.read() else {
			Issue.record("no journal")
			return
		}
		#expect(lines == [ChangeJournal.Line(s: 1001, k: nil, p: nil)])
	}

	/// A journal that cannot be read (here another user's, in a folder others may write in) may hold pending lines:
	/// the engine's steps wait for it, reported, rather than take its keys for unchanged. Before, a full read found
	/// no line, took the pending change for an outside edit and put the agreed value back over it.
	@Test(.enabled(if: geteuid() == 0, "only root can give the journal another owner"))
	func aJournalThatCannotBeReadHoldsBackTheStepsInsteadOfDroppingItsLines() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("unreadable"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: settings))
		do {
			let store = try Edge.freshStore(at: settings)
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["a"])
			try store.write("1", forKey: "a")
			#expect(await engine.synchronize())
			try store.write("2", forKey: "a")
			#expect(store.flush())
		}
		let folderPath = settings.deletingLastPathComponent().path
		let mode = try #require(try FileManager.default.attributesOfItem(atPath: folderPath)[.posixPermissions] as? Int)
		#expect(chown(journal.file.path, 12_345, 12_345) == 0)
		#expect(chmod(folderPath, 0o777) == 0)
		FailureRecorder.start()
		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["a"])
		#expect(await engine.synchronize() == false)
		#expect(!FailureRecorder.failures(mentioning: journal.file.path).isEmpty)
		#expect(store.storedValue(forKey: "a") as? String == "2", "the pending change stays")
		#expect(try await Edge.value(of: prefix + "a", in: remote) == "1")

		#expect(chown(journal.file.path, 0, 0) == 0)
		#expect(chmod(folderPath, mode_t(mode)) == 0)
		#expect(await engine.synchronize())
		#expect(try await Edge.value(of: prefix + "a", in: remote) == "2")
	}
}
