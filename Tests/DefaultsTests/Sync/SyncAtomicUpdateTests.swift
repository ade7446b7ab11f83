import DefaultsEtcd
import Foundation
import Synchronization
import Testing

@testable import Defaults

/// Atomic updates of synced keys (issue 22): a compare-and-swap loop against a real etcd.
///
/// The time limit is a backstop for a hang (the shortest limit applies, so it is the suite's): the five machines'
/// 1,000 increments go on as long as the counter moves, and fail once it stood still for 20 s, which under CI's
/// load takes more than the minute the other tests need.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 4)) struct SyncAtomicUpdateTests {
	/// An engine syncing `count` in a store of its own, with what observers of `count` hear.
	final class Setup: @unchecked Sendable {
		let store = Defaults.InMemoryStore()
		let engine: Defaults.SyncEngine
		let key: Defaults.Key<Int>
		let heard = Tally()
		var observation: (any Defaults.Observation)?

		init(remote: any Defaults.RemoteKeyValueService, prefix: String) {
			engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["count"])
			key = Defaults.Key<Int>("count", default: 0, suite: store)
		}

		func observe() {
			observation = Defaults.observe(key, options: []) { [heard] _ in heard.add() }
		}

		/// Adds `amount` through the public API, which routes an update of a synced key to its engine.
		func increment(by amount: Int = 1) async throws -> Int? {
			try await Defaults.update(key) { $0 += amount }
		}
	}

	static func remoteValue(_ remote: EtcdClient, _ key: String) async throws -> (value: Int?, modRevision: Int64) {
		let entry = try await remote.read(prefix: key).entries.first { $0.key == key }
		return (entry.flatMap { SyncedValueCoding.decode($0.value) } as? Int, entry?.modRevision ?? 0)
	}

	/// Expects observers to have heard `count` changes. Final without waiting: an update applies its value before it
	/// returns, and observers hear a change before the change returns. With the engine's watch running, a test first
	/// waits for the watch to pass its updates' commits (``watchPassed(_:remote:prefix:)``).
	static func expectHeard(_ setup: Setup, _ count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
		#expect(setup.heard.count == count, sourceLocation: sourceLocation)
	}

	/// Writes a key no engine syncs under `prefix` and waits until `setup`'s watch has delivered it: every commit
	/// before it has been delivered too.
	static func watchPassed(_ setup: Setup, remote: EtcdClient, prefix: String) async throws {
		let marker = try await remote.compareAndSwap(
			key: prefix + "marker-\(UUID().uuidString)", value: Data("m".utf8), expectedModRevision: 0)
		guard case .written(let revision) = marker else {
			Issue.record("the marker was not written: \(marker)")
			return
		}
		try await setup.engine.waitUntilApplied(revision: revision)
	}

	/// Many atomic updates of many keys, on a settings file, leave bookkeeping bounded by the keys, not by the
	/// updates: the state file keeps one record and one settled sequence per key, the journal its last line, and etcd
	/// one update record per key this machine updated (`<key>/.defaults-update/<machine id>`, the first key an
	/// update writes), listing at most ``AtomicUpdateLoop/Record/capacity`` sequences. After 40 rounds the state file
	/// is as large as after the first but for the digits of the numbers that grew (values, revisions, sequences);
	/// bookkeeping kept per update (a sequence per update, 40 per key) would pass that by far.
	@Test func manyUpdatesOfManyKeysLeaveBookkeepingBoundedByTheKeys() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("bounded-updates"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let stateFile = folder.file("app.plist.sync.json")
		let store = try SyncSettingsFileEdgeTests.freshStore(at: settings)
		let names = (0..<8).map { "k\($0)" }
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(names)
		defer { engine.stop() }
		let keys = names.map { Defaults.Key<Int>($0, default: 0, suite: store) }
		// Each key on its own, then all in one transaction (its update record is the first key's).
		func round() async throws {
			for key in keys {
				_ = try await Defaults.update(key) { $0 += 1 }
			}
			_ = try await Defaults.SyncEngine.atomicUpdate(forKeys: names, in: store) { values in
				Dictionary(uniqueKeysWithValues: names.map { ($0, (values[$0] as? Int ?? 0) + 1) })
			}
		}
		try await round()
		let firstSize = try Data(contentsOf: stateFile).count
		let rounds = 40
		for _ in 2...rounds {
			try await round()
		}

		for key in keys {
			#expect(store[key] == 2 * rounds)
		}
		let state = try #require(SyncState.load(from: stateFile).state)
		#expect(Set(state.records.keys) == Set(names))
		#expect(Set((state.settled ?? [:]).keys) == Set(names))
		let size = try Data(contentsOf: stateFile).count
		#expect(
			size <= firstSize + 16 * names.count,
			"state file: \(firstSize) bytes after 1 round, \(size) after \(rounds)")
		let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: settings))
		guard case .lines(let lines) = journal.read() else {
			Issue.record("the journal does not read")
			return
		}
		#expect(lines.count <= 1, "\(lines.count) lines")

		let entries = try await remote.read(prefix: prefix).entries
		let records = entries.filter { $0.key.contains(AtomicUpdateLoop.Record.infix) }
		// Besides them, the keys and the prefix's epoch key.
		#expect(entries.count - records.count == names.count + 1)
		let machine = try #require(state.machine)
		#expect(
			Set(records.map(\.key))
				== Set(names.map { AtomicUpdateLoop.Record.key(of: prefix + $0, machine: machine) }))
		for record in records {
			let read = try #require(AtomicUpdateLoop.Record(record.value))
			#expect(read.committed.count == AtomicUpdateLoop.Record.capacity, "\(record.key)")
			#expect(read.dropped > 0)
		}
	}

	@Test func anUpdateCommitsOnTheRemoteAppliesLocallyOnceAndPushesNothingBack() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let setup = Setup(remote: remote, prefix: "/test/update/")
		setup.observe()
		var conflicts = setup.engine.conflicts.makeAsyncIterator()
		// First without the watch, which would otherwise bring the committed value too.
		for expected in 1...3 {
			#expect(try await setup.increment() == expected)
		}
		#expect(setup.store[setup.key] == 3)
		Self.expectHeard(setup, 3)
		let committed = try await Self.remoteValue(remote, "/test/update/count")
		#expect(committed.value == 3)
		// Agreed on: no push follows (the revision stays), and no conflict is reported.
		#expect(await setup.engine.synchronize())
		#expect(try await Self.remoteValue(remote, "/test/update/count") == committed)
		#expect(setup.engine.status.pendingCount == 0)

		setup.engine.start()
		for expected in 4...6 {
			#expect(try await setup.increment() == expected)
		}
		try await Self.watchPassed(setup, remote: remote, prefix: "/test/update/")
		Self.expectHeard(setup, 6)
		let later = try await Self.remoteValue(remote, "/test/update/count")
		#expect(later.value == 6)
		#expect(await setup.engine.synchronize())
		#expect(try await Self.remoteValue(remote, "/test/update/count") == later)
		// `synchronize()` above pushed and read after the update, so a conflict it lost is in the stream by now; a task
		// cancelled at once ends the stream, which still hands over what it holds.
		let reported = Task { await conflicts.next() }
		reported.cancel()
		#expect(await reported.value == nil)
	}

	/// An update that removes the key leaves a tombstone, which the next update reads as no value and compares
	/// against (a compare against 0 could not tell the removal from any other).
	@Test func anUpdateThatRemovesTheKeyLeavesATombstoneTheNextReadsAsNoValue() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/update-removal/", store: store)
		engine.add(["note"])
		let key = Defaults.Key<String?>("note", suite: store)
		#expect(try await Defaults.update(key) { $0 = "first" } == "first")
		#expect(try await Defaults.update(key) { $0 = nil } == nil)
		#expect(store[key] == nil)
		let tombstone = try #require(try await remote.read(prefix: "/test/update-removal/note").entries.first)
		#expect(SyncedValueCoding.isRemoval(tombstone.value))
		#expect(try await Defaults.update(key) { $0 = ($0 ?? "nothing") + ", then second" } == "nothing, then second")
		#expect(store[key] == "nothing, then second")
		#expect(await engine.synchronize())
	}

	@Test func aKeyNoEngineSyncsIsLeftToTheCaller() async throws {
		let store = Defaults.InMemoryStore()
		var ran = false
		let outcome = try await Defaults.SyncEngine.atomicUpdate(forKey: "count", in: store) { _ in
			ran = true
			return 1
		}
		guard case .notSynced = outcome else {
			Issue.record("an update of a key nothing syncs went through sync")
			return
		}
		#expect(!ran)
		#expect(store.storedValue(forKey: "count") == nil)
	}

	@Test func anUpdateWhileEtcdIsDownFailsAndChangesNothingLocallyOrRemotely() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 1)
		let counting = CountingRemote(remote)
		let setup = Setup(remote: counting, prefix: "/test/offline-update/")
		#expect(try await setup.increment(by: 5) == 5)
		let before = try await Self.remoteValue(remote, "/test/offline-update/count")
		setup.observe()

		etcd.kill()
		let ran = Tally()
		let callsBefore = counting.calls.load(ordering: .relaxed)
		let error = await #expect(throws: Defaults.SyncedUpdateError.self) {
			try await Defaults.SyncEngine.atomicUpdate(forKey: "count", in: setup.store) { value in
				ran.add()
				return (value as? Int ?? 0) + 1
			}
		}
		#expect(error?.reason == .unreachable)
		#expect(error?.changedNothing == true)
		#expect(error?.message.contains("needs the remote") == true, "\(String(describing: error))")
		// At once: one read of the key, which failed, and no tries after it until a deadline.
		#expect(counting.calls.load(ordering: .relaxed) - callsBefore == 1)
		#expect(ran.count == 0)
		#expect(setup.store[setup.key] == 5)

		// A plain write stays offline-first; an update then fails too rather than overwrite it unseen.
		setup.store[setup.key] = 7
		await #expect(throws: Defaults.SyncedUpdateError.self) { try await setup.increment() }
		#expect(setup.store[setup.key] == 7)
		Self.expectHeard(setup, 1)

		try await etcd.restart()
		#expect(try await Self.remoteValue(remote, "/test/offline-update/count") == before)
		// Back online, the queued write goes out first and the update builds on it.
		#expect(try await setup.increment() == 8)
		#expect(try await Self.remoteValue(remote, "/test/offline-update/count").value == 8)
	}

	@Test func aLocalChangeWaitingToBePushedIsPushedBeforeTheUpdate() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let setup = Setup(remote: remote, prefix: "/test/pending-update/")
		// The engine is not started: the write waits to be pushed.
		setup.store[setup.key] = 41
		#expect(try await setup.increment() == 42)
		#expect(try await Self.remoteValue(remote, "/test/pending-update/count").value == 42)
		#expect(setup.store[setup.key] == 42)
	}

	@Test func aClosureThatThrowsChangesNothing() async throws {
		struct Refused: Error {}
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let setup = Setup(remote: remote, prefix: "/test/throwing-update/")
		#expect(try await setup.increment(by: 3) == 3)
		let before = try await Self.remoteValue(remote, "/test/throwing-update/count")
		setup.observe()
		await #expect(throws: Refused.self) {
			try await Defaults.SyncEngine.atomicUpdate(forKey: "count", in: setup.store) { _ in throw Refused() }
		}
		#expect(try await Self.remoteValue(remote, "/test/throwing-update/count") == before)
		#expect(setup.store[setup.key] == 3)
		Self.expectHeard(setup, 0)
	}

	/// Another machine commits between the update's read and its commit: the commit fails, and the closure runs
	/// again on the newer value.
	@Test func aConflictRetriesAndTheClosureRunsAgainOnTheLatestValue() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let interfering = FirstTransactionRemote.interfering(
			remote, writing: try SyncedValueCoding.encode(100), to: "/test/conflict-update/count")
		let setup = Setup(remote: interfering, prefix: "/test/conflict-update/")
		setup.observe()
		var seen: [Int?] = []
		let outcome = try await Defaults.SyncEngine.atomicUpdate(forKey: "count", in: setup.store) { value in
			seen.append(value as? Int)
			return (value as? Int ?? 0) + 1
		}
		guard case .updated(let value) = outcome else {
			Issue.record("the key is synced, yet the update was not made through sync")
			return
		}
		#expect(value as? Int == 101)
		#expect(seen == [nil, 100])
		#expect(try await Self.remoteValue(remote, "/test/conflict-update/count").value == 101)
		#expect(setup.store[setup.key] == 101)
		Self.expectHeard(setup, 1)
	}

	/// etcd commits the update and its answer is lost (as when the leader dies after committing): the update is
	/// recognised as committed by its mark, not made a second time.
	@Test func aCommitWhoseAnswerIsLostCountsOnce() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let lossy = FirstTransactionRemote.losingTheFirstAnswer(remote)
		let setup = Setup(remote: lossy, prefix: "/test/lost-answer/")
		setup.observe()
		let runs = Tally()
		let outcome = try await Defaults.SyncEngine.atomicUpdate(forKey: "count", in: setup.store) { value in
			runs.add()
			return (value as? Int ?? 0) + 1
		}
		guard case .updated(let value) = outcome else {
			Issue.record("the key is synced, yet the update was not made through sync")
			return
		}
		#expect(value as? Int == 1)
		#expect(runs.count == 1)
		// The answer was lost, and one run committed once: the update found its commit by its mark.
		#expect(lossy.hasIntercepted)
		#expect(try await Self.remoteValue(remote, "/test/lost-answer/count").value == 1)
		#expect(setup.store[setup.key] == 1)
		Self.expectHeard(setup, 1)
		#expect(try await setup.increment() == 2)
		// One record per machine and key stays, whatever the number of updates: no key per try is left behind.
		let machine = try #require(await setup.engine.worker.state.machine)
		let record = AtomicUpdateLoop.Record.key(of: "/test/lost-answer/count", machine: machine)
		let entries = try await remote.read(prefix: "/test/lost-answer/").entries
		#expect(entries.map(\.key) == ["/test/lost-answer/.defaults-epoch", "/test/lost-answer/count", record])
	}

	/// The commit lands and its answer is lost, and another machine changes the key before the update reads again:
	/// this machine's update record lists the try, so it counts once, not twice.
	@Test func aLostCommitThatAnotherMachineOverwroteCountsOnce() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let setup = try await expectACommitOverwrittenAtOnceCountsOnce(prefix: "/test/lost-overwritten/", on: remote) {
			_ in throw Defaults.RemoteServiceError.unreachable("the answer was lost")
		}
		guard let setup else {
			return
		}
		#expect(await setup.engine.synchronize())
		#expect(setup.store[setup.key] == 100)
	}

	/// etcd's client sends a transaction whose answer was lost to the next member, which finds the compares broken by
	/// the first send's commit and answers "conflict"; meanwhile another machine has overwritten the key, so the value
	/// no longer carries the update's mark. The update record still lists the try: it counts once, and the closure
	/// does not run again (it did on the update's mark in the value alone: the key ended on 101 for one increment).
	@Test func aCommitAnsweredAsAConflictBySecondSendCountsOnce() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		_ = try await expectACommitOverwrittenAtOnceCountsOnce(prefix: "/test/resent-commit/", on: remote) { commit in
			try await commit()
		}
	}

	/// A lost answer, another machine's write over the commit, and no watch of the key's history to be had (as while
	/// etcd elects a leader): the update record alone tells that the try committed, so the update counts once and
	/// succeeds (a history lookup that could not answer made the update fail with an unknown outcome).
	@Test func aLostCommitIsFoundWithoutTheKeysHistory() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		_ = try await expectACommitOverwrittenAtOnceCountsOnce(
			prefix: "/test/lost-no-history/", on: remote, wrap: { WatchlessRemote(wrapped: $0) }
		) { _ in
			throw Defaults.RemoteServiceError.unreachable("the answer was lost")
		}
	}

	/// The shape of the tests above: the update's first try commits, another machine writes 100 over it at once, and
	/// `answer` is what the update then hears of its commit (a lost answer, or the second send's "conflict"); `wrap`
	/// makes the remote the engine uses. One increment must run its closure once, return 1 and leave the other
	/// machine's 100 in etcd. Returns the setup for what a test checks further, `nil` when the update was not synced.
	func expectACommitOverwrittenAtOnceCountsOnce(
		prefix: String, on remote: EtcdClient,
		wrap: (any Defaults.RemoteKeyValueService) -> any Defaults.RemoteKeyValueService = { $0 },
		answer: @escaping @Sendable (_ commit: () async throws -> Int64?) async throws -> Int64?
	) async throws -> Setup? {
		let key = prefix + "count"
		let lossy = FirstTransactionRemote(remote: remote) { remote, commit in
			let revision = try #require(try await commit())
			_ = try await remote.compareAndSwap(
				key: key, value: try SyncedValueCoding.encode(100), expectedModRevision: revision)
			return try await answer(commit)
		}
		let setup = Setup(remote: wrap(lossy), prefix: prefix)
		let runs = Tally()
		let outcome = try await Defaults.SyncEngine.atomicUpdate(forKey: "count", in: setup.store) { value in
			runs.add()
			return (value as? Int ?? 0) + 1
		}
		guard case .updated(let value) = outcome else {
			Issue.record("the key is synced, yet the update was not made through sync")
			return nil
		}
		#expect(lossy.hasIntercepted)
		#expect(value as? Int == 1)
		#expect(runs.count == 1)
		#expect(try await Self.remoteValue(remote, key).value == 100)
		return setup
	}

	/// An update writes the second wire form with this machine's mark, as a push does (issue 28), and its echo
	/// through the watch is known as its own: nothing is pushed back.
	@Test func anUpdateWritesTheSecondWireFormWithThisMachinesMark() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let setup = Setup(remote: remote, prefix: "/test/update-mark/")
		setup.engine.start()
		#expect(try await setup.increment() == 1)
		let entry = try #require(try await remote.read(prefix: "/test/update-mark/count").entries.first)
		let machine = try #require(await setup.engine.worker.state.machine)
		guard case .value(let stored, let mark?) = SyncedValueCoding.contents(of: entry.value) else {
			Issue.record("the committed bytes are not the second wire form with a mark: \(entry.value as NSData)")
			return
		}
		#expect(stored as? Int == 1)
		#expect(mark.machine == machine)
		try await Self.watchPassed(setup, remote: remote, prefix: "/test/update-mark/")
		#expect(await setup.engine.synchronize())
		#expect(try await Self.remoteValue(remote, "/test/update-mark/count").modRevision == entry.modRevision)
		#expect(setup.store[setup.key] == 1)
	}

	/// A plain write to the key in this process while the update runs counts as made after the update: it stays, and
	/// is pushed over the committed value (against its revision, so it wins without a conflict).
	@Test func aPlainWriteWhileTheUpdateRunsStaysAndIsPushedOverIt() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<Int>("count", default: 0, suite: store)
		let writing = FirstTransactionRemote.hooked(remote) { store[key] = 50 }
		let engine = Defaults.SyncEngine(remote: writing, prefix: "/test/write-during-update/", store: store)
		engine.add(["count"])
		var conflicts = engine.conflicts.makeAsyncIterator()
		let outcome = try await Defaults.SyncEngine.atomicUpdate(forKey: "count", in: store) { ($0 as? Int ?? 0) + 1 }
		guard case .updated(let value) = outcome else {
			Issue.record("the key is synced, yet the update was not made through sync")
			return
		}
		#expect(value as? Int == 1)
		#expect(store[key] == 50)
		#expect(await engine.synchronize())
		#expect(try await Self.remoteValue(remote, "/test/write-during-update/count").value == 50)
		#expect(store[key] == 50)
		// `synchronize()` above pushed and read after the update, so a conflict it lost is in the stream by now; a task
		// cancelled at once ends the stream, which still hands over what it holds.
		let reported = Task { await conflicts.next() }
		reported.cancel()
		#expect(await reported.value == nil)
	}

	/// Several keys of one store in one transaction.
	@Test func severalKeysAreUpdatedInOneTransaction() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/multi-update/", store: store)
		engine.add(["from", "to"])
		try store.write(10, forKey: "from")
		let outcome = try await Defaults.SyncEngine.atomicUpdate(forKeys: ["from", "to"], in: store) { values in
			var values = values
			values["from"] = (values["from"] as? Int ?? 0) - 4
			values["to"] = (values["to"] as? Int ?? 0) + 4
			return values
		}
		guard case .updated(let values, _) = outcome else {
			Issue.record("the keys are synced, yet the update was not made through sync")
			return
		}
		#expect(values["from"] as? Int == 6 && values["to"] as? Int == 4)
		let from = try await Self.remoteValue(remote, "/test/multi-update/from")
		let to = try await Self.remoteValue(remote, "/test/multi-update/to")
		#expect(from.value == 6 && to.value == 4)
		#expect(from.modRevision == to.modRevision)
		#expect(store.storedValue(forKey: "from") as? Int == 6 && store.storedValue(forKey: "to") as? Int == 4)
	}

	/// A key the transaction only read is compared, not written again: it keeps its revision, so that another
	/// machine's change of it made meanwhile is not turned into a lost conflict by a write of the same bytes.
	@Test func aKeyOnlyReadIsComparedAndKeepsItsRevision() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/read-only/", store: store)
		engine.add(["limit", "used"])
		let limit = Defaults.Key<Int>("limit", default: 0, suite: store)
		let used = Defaults.Key<Int>("used", default: 0, suite: store)
		#expect(try await Defaults.update(limit) { $0 = 3 } == 3)
		let before = try await Self.remoteValue(remote, "/test/read-only/limit")
		let allowed = try await Defaults.update([limit, used]) { transaction in
			guard transaction[used] < transaction[limit] else {
				return false
			}
			transaction[used] += 1
			return true
		}
		#expect(allowed)
		#expect(try await Self.remoteValue(remote, "/test/read-only/used").value == 1)
		#expect(
			try await Self.remoteValue(remote, "/test/read-only/limit") == before, "the key only read was rewritten")
		// Left as it was, a single key is not written either.
		let usedBefore = try await Self.remoteValue(remote, "/test/read-only/used")
		#expect(try await Defaults.update(used) { $0 = max($0, 1) } == 1)
		#expect(try await Self.remoteValue(remote, "/test/read-only/used") == usedBefore)
	}

	/// The closure throws on its second run, after a try whose answer was lost and that the remote did not commit
	/// (yet): the update may still be committed, so it says so instead of rethrowing as if nothing had changed.
	@Test func aClosureThatThrowsAfterALostAnswerReportsAnUnknownOutcome() async throws {
		struct Refused: Error {}
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let losing = FirstTransactionRemote(remote: remote) { _, _ in
			throw Defaults.RemoteServiceError.unreachable("no answer")
		}
		let setup = Setup(remote: losing, prefix: "/test/throw-after-loss/")
		var runs = 0
		await #expect {
			try await Defaults.update(setup.key) { value in
				runs += 1
				guard runs == 1 else {
					throw Refused()
				}
				value += 1
			}
		} throws: { error in
			(error as? Defaults.SyncedUpdateError)?.reason == .outcomeUnknown
		}
		#expect(runs == 2)
	}

	/// The first try's answer is lost without its commit, and another program writes a value that is no synced
	/// stored form before the update reads again: the update fails on it, but the first try may still commit, so it
	/// says the outcome is unknown, not that nothing changed.
	@Test func anUnreadableValueAfterALostAnswerReportsAnUnknownOutcome() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let key = "/test/unreadable-after-loss/count"
		let losing = FirstTransactionRemote(remote: remote) { remote, _ in
			let current = try await remote.read(prefix: key).entries.first { $0.key == key }
			_ = try await remote.compareAndSwap(
				key: key, value: Data([0xFF, 0xFE, 0x00]), expectedModRevision: current?.modRevision ?? 0)
			throw Defaults.RemoteServiceError.unreachable("no answer")
		}
		let setup = Setup(remote: losing, prefix: "/test/unreadable-after-loss/")
		await #expect {
			try await setup.increment()
		} throws: { error in
			// Its message quotes why the update ended, not that error's "nothing was changed".
			guard let error = error as? Defaults.SyncedUpdateError, error.reason == .outcomeUnknown else {
				return false
			}
			// Once, in its own "Nothing was changed locally".
			return error.message.contains("is not a synced stored form")
				&& error.message.lowercased().components(separatedBy: "nothing was changed").count == 2
		}
		#expect(losing.hasIntercepted)
	}

	/// The first run's commit lands late: after the update read again (no mark yet) and ran its closure a second
	/// time, whose commit then conflicts with the first's. The update is the first run's, so it returns the first run's
	/// result, not the last run's.
	@Test func theResultIsThatOfTheRunTheRemoteCommitted() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let setup = Setup(remote: LateFirstCommitRemote(remote: remote), prefix: "/test/late-commit/")
		var runs = 0
		let committedRun = try await Defaults.update([setup.key]) { transaction in
			runs += 1
			transaction[setup.key] += 1
			return runs
		}
		#expect(runs == 2, "the closure ran again after the lost answer")
		#expect(committedRun == 1, "the remote committed the first run")
		#expect(try await Self.remoteValue(remote, "/test/late-commit/count").value == 1)
		#expect(setup.store[setup.key] == 1)
	}

	/// Machines as child processes, each adding 1 to one synced counter 200 times with an atomic update.
	@Test func fiveMachinesIncrementingOneSyncedCounterEndOnTheExactTotal() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let machines = try (0..<5).map { _ in try Machine(etcd: etcd, prefix: "/test/counter/") }
		// The machines keep no clock: they stop early only when the wait below creates this file.
		let giveUp = machines[0].folder.file("give-up")
		let processes = try machines.map { try $0.start("sync-increment", ["count", "200", giveUp.path]) }
		defer {
			for process in processes {
				process.stopIfRunning()
			}
		}
		let (results, stalledAt) = try await FaultInjectionTests.waitForIncrementingMachines(
			processes, anyOf: [etcd.endpoint], prefix: "/test/counter/", stall: .seconds(20).scaledForSanitizer,
			giveUp: giveUp)
		if let stalledAt {
			Issue.record("no machine made an increment for 20 s; the counter stood at \(stalledAt)")
		}
		var lasts: [Int] = []
		for result in results {
			#expect(result.status == 0, "\(result)")
			#expect(result.standardOutput.hasPrefix("incremented 200 "), "\(result)")
			lasts += result.lines.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }
		}
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		#expect(try await Self.remoteValue(remote, "/test/counter/count").value == 1000)
		#expect(lasts.max() == 1000)
		#expect(try await machines[0].run("sync-dump", ["count"]).lines.first == "synced")
	}
}
