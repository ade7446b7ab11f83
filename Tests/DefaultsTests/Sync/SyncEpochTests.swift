import DefaultsEtcd
import Foundation
import Synchronization
import Testing

@testable import Defaults

/// A remote that lost its data and whose revision has since climbed past the one a machine knows: the revision check
/// cannot tell, the prefix's epoch key can (Docs/Sync.md, "A remote that lost its data").
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 2)) struct SyncEpochTests {
	typealias Edge = SyncSettingsFileEdgeTests

	/// Two machines of one prefix, `a`, `b`, `c` on both and `d` on the first only, synced; the first's state knows
	/// a revision above 20.
	struct Machines {
		let remote: EtcdClient
		let prefix = "/test/\(uniqueKeyName("epoch"))/"
		let folders: (first: TemporaryDirectory, second: TemporaryDirectory)

		init(_ etcd: EtcdServer) throws {
			remote = try EtcdClient(endpoints: [etcd.endpoint])
			folders = (try TemporaryDirectory(), try TemporaryDirectory())
		}

		func machine(
			_ folder: TemporaryDirectory, _ names: [String], through remote: (any Defaults.RemoteKeyValueService)? = nil
		) throws -> (Defaults.FileStore, Defaults.SyncEngine) {
			let store = try Edge.freshStore(at: folder.file("app.plist"))
			let engine = Defaults.SyncEngine(remote: remote ?? self.remote, prefix: prefix, store: store)
			engine.add(names)
			return (store, engine)
		}

		func first() throws -> (Defaults.FileStore, Defaults.SyncEngine) {
			try machine(folders.first, ["a", "b", "c", "d"])
		}

		func second() throws -> (Defaults.FileStore, Defaults.SyncEngine) {
			try machine(folders.second, ["a", "b", "c"])
		}

		func setUp() async throws {
			let (first, firstSync) = try first()
			let (second, secondSync) = try second()
			for name in ["a", "c", "d"] {
				try first.write("1", forKey: name)
			}
			#expect(first.flush())
			#expect(await firstSync.synchronize())
			try second.write("1", forKey: "b")
			#expect(second.flush())
			#expect(await secondSync.synchronize())
			for index in 0..<20 {
				try first.write("\(index)", forKey: "c")
				#expect(first.flush())
				#expect(await firstSync.synchronize())
			}
			try first.write("1", forKey: "c")
			#expect(first.flush())
			#expect(await firstSync.synchronize())
			#expect(await secondSync.synchronize())
		}

		/// The second machine writes `b` until etcd's revision is past `revision`.
		func secondWritesPast(_ revision: Int64) async throws {
			let (second, secondSync) = try second()
			var index = 0
			while try await remote.read(prefix: prefix).revision <= revision {
				index += 1
				try second.write("b\(index)", forKey: "b")
				#expect(second.flush())
				#expect(await secondSync.synchronize())
				try #require(index < 200)
			}
		}

		func knownRevision(_ folder: TemporaryDirectory) throws -> Int64 {
			guard case .state(let state) = SyncState.load(from: folder.file("app.plist.sync.json")) else {
				throw CancellationError()
			}
			return state.knownRevision
		}

		/// What etcd holds for `names`.
		func held(_ names: [String]) async throws -> [String: String] {
			var held: [String: String] = [:]
			for name in names {
				held[name] = try await Edge.value(of: prefix + name, in: remote)
			}
			return held
		}

		/// The first machine, back with an edit of `a` made while it was away: it notices, puts `d` back, pushes its
		/// edit, and every machine and etcd end on the same values.
		func firstComesBackAndEveryoneConverges() async throws {
			let (first, firstSync) = try first()
			try first.write("2", forKey: "a")
			#expect(first.flush())
			var conflicts = firstSync.conflicts.makeAsyncIterator()
			#expect(await firstSync.synchronize())
			#expect(await firstSync.synchronize())
			let (second, secondSync) = try second()
			#expect(await secondSync.synchronize())

			let bValue = try #require(second.storedValue(forKey: "b") as? String)
			let expected = ["a": "2", "b": bValue, "c": "1", "d": "1"]
			#expect(
				try await held(["a", "b", "c", "d"]) == expected, "\(FailureRecorder.failures(mentioning: prefix))")
			for name in ["a", "b", "c", "d"] {
				#expect(first.storedValue(forKey: name) as? String == expected[name], "\(name) on the first machine")
			}
			for name in ["a", "b", "c"] {
				#expect(second.storedValue(forKey: name) as? String == expected[name], "\(name) on the second machine")
			}
			let reports = FailureRecorder.failures(mentioning: prefix).filter { $0.message.contains("not the one") }
			#expect(
				reports.contains { $0.message.contains("epoch key \(prefix).defaults-epoch") },
				"the first machine says why: \(reports.map(\.message))")
			let reported = Task { await conflicts.next() }
			reported.cancel()
			#expect(await reported.value == nil, "no conflict: no other machine changed `a`")
		}
	}

	/// etcd wiped while the first machine is away, and written past the revision it knows by the second (which
	/// noticed the wipe by its revision and put its values back). Before the epoch the first machine did not notice:
	/// it took `d`, which only it held, as removed by another machine and deleted it, and its edit of `a` met a key
	/// it did not expect.
	@Test func aWipeWrittenPastTheKnownRevisionIsNoticedByTheEpoch() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let machines = try Machines(etcd)
		try await machines.setUp()
		let known = try machines.knownRevision(machines.folders.first)

		try await etcd.wipe()
		try await machines.secondWritesPast(known)
		#expect(try await machines.held(["d"]) == [:], "only the first machine holds `d`")
		try await machines.firstComesBackAndEveryoneConverges()
	}

	/// A rejoin whose put-back fails (etcd unreachable, or refusing the write, in the middle of the rejoin) is one
	/// outage: the rejoin is reported once however many tries find the lost remote again (etcd's revision moving
	/// between them, as other machines write), and tried until the put-back is written, losing no local value. Before,
	/// the report named the revision the state knew, which the failed rejoin had moved to etcd's: every try after
	/// a write elsewhere reported the rejoin again.
	@Test(arguments: [false, true]) func aRejoinWhosePutBackFailsIsReportedOnceAndRetriedUntilItIsWritten(
		refused: Bool
	) async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let machines = try Machines(etcd)
		let prefix = machines.prefix
		try await machines.setUp()
		let known = try machines.knownRevision(machines.folders.first)
		try await etcd.wipe()
		try await machines.secondWritesPast(known)

		let failing = FailingPutBacks(machines.remote, refused: refused)
		let (first, firstSync) = try machines.machine(machines.folders.first, ["a", "b", "c", "d"], through: failing)
		try first.write("2", forKey: "a")
		#expect(first.flush())
		let (second, secondSync) = try machines.second()
		for index in 0..<3 {
			#expect(await !firstSync.synchronize(), "the put-back of `d` fails")
			try second.write("moved\(index)", forKey: "b")
			#expect(second.flush())
			#expect(await secondSync.synchronize())
		}
		#expect(failing.failed.load(ordering: .relaxed) >= 3)
		failing.fails.store(false, ordering: .relaxed)
		#expect(await firstSync.synchronize())
		#expect(await firstSync.synchronize())

		#expect(try await machines.held(["a", "b", "c", "d"]) == ["a": "2", "b": "moved2", "c": "1", "d": "1"])
		#expect(first.storedValue(forKey: "d") as? String == "1")
		// The second machine's report of the wipe (by the revision) is its own; the first machine's names the epoch.
		let reports = FailureRecorder.failures(mentioning: prefix).filter {
			$0.message.contains("not the one") && $0.message.contains("epoch key")
		}
		#expect(reports.count == 1, "\(reports.map(\.message))")
		let stopped = FailureRecorder.failures(mentioning: prefix).filter { $0.message.contains("stopped") }
		#expect(stopped.count <= 1, "\(stopped.map(\.message))")
		let epoch = try #require(try await machines.remote.read(prefix: prefix + SyncWorker.epochName).entries.first)
		guard case .state(let state) = SyncState.load(from: machines.folders.first.file("app.plist.sync.json")) else {
			Issue.record("no state")
			return
		}
		#expect(state.epoch == String(decoding: epoch.value, as: UTF8.self), "rejoined: the state took etcd's epoch")
	}

	/// etcd restored from a copy of its data taken after the epoch was made, then written past the revision the
	/// second machine knows by the first. The epoch survives a restore: the first machine notices by the revision
	/// (below the one it knows) and makes a new epoch, which the second then notices, whatever the revision.
	@Test func aRestoreFromASnapshotWithTheEpochIsNoticedByEveryMachine() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let machines = try Machines(etcd)
		let prefix = machines.prefix
		try await machines.setUp()
		let (first, firstSync) = try machines.first()
		let (second, secondSync) = try machines.second()
		let copy = etcd.folder.file("copy")
		etcd.stop()
		try FileManager.default.copyItem(at: etcd.folder.file("data"), to: copy)
		try await etcd.restart()
		// After the copy: `b` changes on the second machine, and the first hears it.
		try second.write("2", forKey: "b")
		#expect(second.flush())
		#expect(await secondSync.synchronize())
		#expect(await firstSync.synchronize())
		let known = try machines.knownRevision(machines.folders.second)

		etcd.stop()
		try FileManager.default.removeItem(at: etcd.folder.file("data"))
		try FileManager.default.moveItem(at: copy, to: etcd.folder.file("data"))
		try await etcd.restart()
		#expect(try await machines.held(["b"]) == ["b": "1"], "the restored copy is older")
		// The first machine notices by the revision and takes etcd's `b`; then it writes etcd past the revision the
		// second machine, away meanwhile, knows.
		#expect(await firstSync.synchronize())
		#expect(first.storedValue(forKey: "b") as? String == "1")
		var index = 0
		while try await machines.remote.read(prefix: prefix).revision <= known {
			index += 1
			try first.write("\(index)", forKey: "c")
			#expect(first.flush())
			#expect(await firstSync.synchronize())
			try #require(index < 200)
		}
		try first.write("1", forKey: "c")
		#expect(first.flush())
		#expect(await firstSync.synchronize())

		#expect(await secondSync.synchronize())
		let reports = FailureRecorder.failures(mentioning: prefix).filter { $0.message.contains("not the one") }
		#expect(reports.contains { $0.message.contains("revision went back") }, "\(reports.map(\.message))")
		#expect(reports.contains { $0.message.contains("epoch key \(prefix).defaults-epoch changed") })
		#expect(second.storedValue(forKey: "b") as? String == "1", "the second takes what etcd holds")
		#expect(try await machines.held(["a", "b", "c", "d"]) == ["a": "1", "b": "1", "c": "1", "d": "1"])
	}

	/// Two processes of one settings file (two stores of one file, each with its engine and its own view of the
	/// shared state) meet a restored remote: the first rejoins it and makes a new epoch; the second, whose own view
	/// still has the old revision and epoch, finds the file's new epoch on the remote and neither rejoins again nor
	/// replaces that epoch (which would raise a false alarm on every machine that took it).
	@Test func aSecondProcessOfTheFileDoesNotRejoinWhatTheFirstRejoined() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let machines = try Machines(etcd)
		let prefix = machines.prefix
		try await machines.setUp()
		let copy = etcd.folder.file("copy")
		etcd.stop()
		try FileManager.default.copyItem(at: etcd.folder.file("data"), to: copy)
		try await etcd.restart()
		let (sharing, sharingSync) = try machines.first()
		let (other, otherSync) = try machines.first()
		for index in 0..<10 {
			try sharing.write("\(index)", forKey: "c")
			#expect(sharing.flush())
			#expect(await sharingSync.synchronize())
		}
		#expect(await otherSync.synchronize(), "both views know the revision after the copy")

		etcd.stop()
		try FileManager.default.removeItem(at: etcd.folder.file("data"))
		try FileManager.default.moveItem(at: copy, to: etcd.folder.file("data"))
		try await etcd.restart()
		let epochKey = prefix + SyncWorker.epochName
		let restored = try #require(try await machines.remote.read(prefix: epochKey).entries.first).value
		#expect(await sharingSync.synchronize())
		let made = try #require(try await machines.remote.read(prefix: epochKey).entries.first).value
		#expect(made != restored, "the first process's rejoin made a new epoch")
		// As the second process's reconnection reads, with its view of the state from before the restore (a
		// `synchronize()` would take the file's lock, and its state, before reading).
		try await otherSync.worker.readEverything()
		#expect(await otherSync.synchronize())
		let after = try #require(try await machines.remote.read(prefix: epochKey).entries.first).value
		#expect(after == made, "the second process kept the epoch the first made")
		let reports = FailureRecorder.failures(mentioning: prefix).filter { $0.message.contains("not the one") }
		#expect(reports.count == 1, "\(reports.map(\.message))")
		guard case .state(let state) = SyncState.load(from: machines.folders.first.file("app.plist.sync.json")) else {
			Issue.record("no state")
			return
		}
		#expect(state.epoch == String(decoding: made, as: UTF8.self))
		let held = try await machines.held(["c"])["c"]
		#expect(sharing.storedValue(forKey: "c") as? String == held, "the restored remote's value, as rejoining takes")
		#expect(other.storedValue(forKey: "c") as? String == held)
	}

	/// A process of the settings file that started before another took etcd's epoch into the file (here from a state
	/// without one, as an older version wrote it; taking an epoch etcd holds writes nothing, so no watch event tells
	/// the first process) and has not stepped under the file's lock since: a wipe written past the revision it knows
	/// is noticed at its reconnection by the file's epoch. Before, it compared with its own view, which had none: it
	/// took `d`, which only this machine held, as removed elsewhere, deleted it, and put nothing back.
	@Test func aProcessThatHasNotSeenTheFilesEpochStillNoticesAWipe() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let machines = try Machines(etcd)
		let prefix = machines.prefix
		try await machines.setUp()
		let stateFile = machines.folders.first.file("app.plist.sync.json")
		var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any])
		json["epoch"] = nil
		try JSONSerialization.data(withJSONObject: json).write(to: stateFile)
		let (late, lateSync) = try machines.first()
		let (_, firstSync) = try machines.first()
		#expect(await firstSync.synchronize(), "takes etcd's epoch into the file, with no alarm")
		guard case .state(let taken) = SyncState.load(from: stateFile) else {
			Issue.record("no state")
			return
		}
		#expect(taken.epoch != nil)
		let known = try machines.knownRevision(machines.folders.first)

		try await etcd.wipe()
		try await machines.secondWritesPast(known)
		// As the background loop reads when it reconnects: at once, with no locked step before it (a push pass, and so
		// `synchronize()`, counts what is pending under the lock first, which reloads the file's state).
		try await lateSync.worker.readEverything()
		#expect(await lateSync.synchronize())
		#expect(try await machines.held(["d"]) == ["d": "1"], "\(FailureRecorder.failures(mentioning: prefix))")
		#expect(late.storedValue(forKey: "d") as? String == "1")
		let reports = FailureRecorder.failures(mentioning: prefix).filter {
			$0.message.contains("not the one") && $0.message.contains("epoch key")
		}
		#expect(reports.count == 1, "\(reports.map(\.message))")
	}

	/// The limit that stays (Docs/Sync.md, "A remote that lost its data"): a state with no epoch at all (written
	/// before the epoch, and no process of the file has read etcd since) notices a wipe by the revision only. Written
	/// past the revision it knows, the wiped etcd is taken for the one it knew: `d`, which only this machine held, is
	/// taken as removed elsewhere, with no report.
	@Test func limitAStateWithoutAnEpochTakesAWipeWrittenPastItsRevisionForItsRemote() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let machines = try Machines(etcd)
		let prefix = machines.prefix
		try await machines.setUp()
		let stateFile = machines.folders.first.file("app.plist.sync.json")
		var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any])
		json["epoch"] = nil
		try JSONSerialization.data(withJSONObject: json).write(to: stateFile)
		let known = try machines.knownRevision(machines.folders.first)

		try await etcd.wipe()
		try await machines.secondWritesPast(known)
		let (first, firstSync) = try machines.first()
		#expect(await firstSync.synchronize())
		#expect(try await machines.held(["d"]) == [:])
		#expect(first.storedValue(forKey: "d") == nil)
		let reports = FailureRecorder.failures(mentioning: prefix).filter {
			$0.message.contains("not the one") && $0.message.contains("(d)")
		}
		#expect(reports.isEmpty, "\(reports.map(\.message))")
	}

	/// A state written before the epoch (no `epoch`) takes the remote's at its next read, with no alarm; a remote
	/// without one gets one, made once however many machines read it.
	@Test func aStateWithoutAnEpochTakesTheRemotesWithoutAnAlarm() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let machines = try Machines(etcd)
		try await machines.setUp()
		let epochKey = machines.prefix + SyncWorker.epochName
		let made = try #require(try await machines.remote.read(prefix: epochKey).entries.first)
		#expect(made.value.count == 32 && made.value.allSatisfy { Data("0123456789abcdef".utf8).contains($0) })
		let b = try #require(try await machines.remote.read(prefix: machines.prefix + "b").entries.first)
		#expect(made.modRevision < b.modRevision, "made at the first read, and kept by every read since")

		let stateFile = machines.folders.first.file("app.plist.sync.json")
		var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any])
		#expect(json["epoch"] as? String == String(decoding: made.value, as: UTF8.self))
		json["epoch"] = nil
		try JSONSerialization.data(withJSONObject: json).write(to: stateFile)
		let (_, firstSync) = try machines.first()
		#expect(await firstSync.synchronize())
		guard case .state(let state) = SyncState.load(from: stateFile) else {
			Issue.record("no state")
			return
		}
		#expect(state.epoch == String(decoding: made.value, as: UTF8.self))
		#expect(FailureRecorder.failures(mentioning: machines.prefix).isEmpty)
	}
}

/// A remote whose writes of a key against "no key" (a rejoin's put-backs), other than the epoch's, fail while
/// ``fails`` is set: as unreachable, or refused.
final class FailingPutBacks: RemoteWrapper {
	let base: EtcdClient
	let refused: Bool
	let fails = Atomic<Bool>(true)
	/// How many writes failed.
	let failed = Atomic<Int>(0)

	init(_ base: EtcdClient, refused: Bool) {
		self.base = base
		self.refused = refused
	}

	var wrapped: any Defaults.RemoteKeyValueService {
		base
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		try failIfAsked(expectedModRevision == 0 && !key.hasSuffix(SyncWorker.epochName))
		return try await base.compareAndSwap(key: key, value: value, expectedModRevision: expectedModRevision)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		try failIfAsked(writes.contains { $0.expectedModRevision == 0 && !$0.isEpoch })
		return try await base.compareAndSwap(all: writes)
	}

	private func failIfAsked(_ isPutBack: Bool) throws {
		guard isPutBack, fails.load(ordering: .relaxed) else {
			return
		}
		failed.add(1, ordering: .relaxed)
		throw refused
			? Defaults.RemoteServiceError.refused("permission denied (a test's)")
			: Defaults.RemoteServiceError.unreachable("the connection broke (a test's)")
	}
}

/// Sync's own entries under the prefix are not keys: a synced key of such a name would overwrite them.
@Suite struct SyncBookkeepingNameTests {
	@Test func aKeyNamedLikeSyncsOwnEntriesIsNotSyncedAndSaysWhy() {
		FailureRecorder.start()
		let engine = Defaults.SyncEngine(remote: UnreachableRemote(), prefix: "/p/", store: Defaults.InMemoryStore())
		let epoch = SyncWorker.epochName
		let record = "count/.defaults-update/0a0b"
		engine.add([epoch, record, "fine"])
		#expect(engine.worker.currentNames == ["fine"])
		for name in [epoch, record] {
			#expect(
				FailureRecorder.failures(mentioning: name).contains { $0.reason == .invalidKeyName },
				"\(name) was not reported")
		}
	}
}
