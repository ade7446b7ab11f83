import DefaultsEtcd
import Foundation
import Synchronization
import Testing

@testable import Defaults

/// One settings file syncs one prefix: its state (`<settings>.sync.json`) keeps one revision and one epoch, and its
/// records by key name. An engine of a second prefix on the same file is refused, and says why.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncStatePrefixTests {
	typealias Edge = SyncSettingsFileEdgeTests

	/// Two engines of one store with two prefixes: the second syncs nothing (its key stays local, nothing is written
	/// under its prefix) and one `Failure` says why; the first goes on, with no false alarm. Before, both synced
	/// through the one state: the second's read put its prefix's epoch in it, and the first's next read took its own
	/// epoch for changed and rejoined.
	@Test func aSecondPrefixOnTheSameSettingsFileIsRefusedAndSaysWhy() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let folder = try TemporaryDirectory()
		let (first, second) = ("/test/\(uniqueKeyName("first"))/", "/test/\(uniqueKeyName("second"))/")
		let store = try Edge.freshStore(at: folder.file("app.plist"))
		let firstSync = Defaults.SyncEngine(remote: remote, prefix: first, store: store)
		firstSync.add(["a"])
		try store.write("1", forKey: "a")
		#expect(store.flush())
		#expect(await firstSync.synchronize())

		let secondSync = Defaults.SyncEngine(remote: remote, prefix: second, store: store)
		secondSync.add(["b"])
		try store.write("1", forKey: "b")
		#expect(store.flush())
		#expect(await !secondSync.synchronize())
		#expect(await !secondSync.synchronize(), "again: still refused")
		#expect(try await remote.read(prefix: second).entries.isEmpty, "nothing written under the second prefix")
		#expect(store.storedValue(forKey: "b") as? String == "1", "kept locally")
		let refusals = FailureRecorder.failures(mentioning: second).filter { $0.reason == .unsupported }
		#expect(refusals.count == 1, "\(FailureRecorder.failures(mentioning: second).map(\.message))")
		#expect(
			refusals.first.map { $0.message.contains(first) && $0.message.contains("one prefix only") } == true,
			"names the prefix the file syncs: \(refusals.map(\.message))")

		try store.write("2", forKey: "a")
		#expect(store.flush())
		#expect(await firstSync.synchronize())
		#expect(try await Edge.value(of: first + "a", in: remote) == "2")
		let alarms = FailureRecorder.failures(mentioning: first).filter { $0.message.contains("not the one") }
		#expect(alarms.isEmpty, "\(alarms.map(\.message))")
		let epoch = try #require(try await remote.read(prefix: first + SyncWorker.epochName).entries.first)
		guard case .state(let state) = SyncState.load(from: folder.file("app.plist.sync.json")) else {
			Issue.record("no state")
			return
		}
		#expect(state.prefix == first)
		#expect(state.epoch == String(decoding: epoch.value, as: UTF8.self))
	}

	/// An engine that reported an outage (its remote down before it read anything) and then finds the state taken by
	/// another prefix says so: the outage report promised its changes would be pushed, and they never will be. Before,
	/// the refusal was taken for the same outage and not reported at all.
	@Test func aRefusalAfterAnOutageIsReported() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let down = try EtcdClient(endpoints: ["http://127.0.0.1:\(try EtcdServer.freePort())"])
		let folder = try TemporaryDirectory()
		let (first, second) = ("/test/\(uniqueKeyName("first"))/", "/test/\(uniqueKeyName("second"))/")
		let store = try Edge.freshStore(at: folder.file("app.plist"))
		let secondSync = Defaults.SyncEngine(remote: down, prefix: second, store: store)
		defer { secondSync.stop() }
		secondSync.add(["b"])
		secondSync.start()
		let isOutageReported = await eventually {
			FailureRecorder.failures(mentioning: second).contains {
				$0.message.contains("when the remote answers again")
			}
		}
		try #require(isOutageReported, "\(FailureRecorder.failures(mentioning: second).map(\.message))")

		let firstSync = Defaults.SyncEngine(remote: remote, prefix: first, store: store)
		firstSync.add(["a"])
		try store.write("1", forKey: "a")
		#expect(store.flush())
		#expect(await firstSync.synchronize(), "the state had no prefix yet: the first engine takes it")
		#expect(await !secondSync.synchronize())
		let refusals = FailureRecorder.failures(mentioning: second).filter { $0.reason == .unsupported }
		#expect(refusals.count == 1, "\(FailureRecorder.failures(mentioning: second).map(\.message))")
		#expect(refusals.first.map { $0.message.contains("one prefix only") } == true, "\(refusals.map(\.message))")
	}

	/// An atomic update whose read finds a remote below the state's revision reads the whole prefix; when another
	/// prefix's engine took the state meanwhile, the update is refused, as documented (before, `StateOfAnotherPrefix`
	/// escaped as a raw error).
	@Test func anAtomicUpdateThatFindsTheStateTakenMeanwhileIsRefused() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let folder = try TemporaryDirectory()
		let (prefix, other) = ("/test/\(uniqueKeyName("update"))/", "/test/\(uniqueKeyName("other"))/")
		let stateFile = folder.file("app.plist.sync.json")
		let remote = StampingRemote(wrapped: try EtcdClient(endpoints: [etcd.endpoint]), key: prefix + "n") {
			// Another prefix's engine takes the state while the update's read is on its way.
			guard let data = try? Data(contentsOf: stateFile),
				var json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
			else {
				return
			}
			json["prefix"] = other
			try? JSONSerialization.data(withJSONObject: json).write(to: stateFile)
		}
		let store = try Edge.freshStore(at: folder.file("app.plist"))
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		defer { engine.stop() }
		engine.add(["n"])
		try store.write("1", forKey: "n")
		#expect(store.flush())
		#expect(await engine.synchronize())
		remote.arm()
		await Self.expectUpdateRefused(of: store, stateFile: stateFile, keptFor: other)
	}

	/// An atomic update of an engine that verified its remote and then finds the state taken by another prefix
	/// (removed and made again by that prefix's engine) is refused, as the update that reads first is. Before, its
	/// check for local changes to push first took the refused step for a settings file it could not read, and said
	/// `localChangeNotPushed`.
	@Test func anAtomicUpdateOfAVerifiedEngineFindingAnotherPrefixsStateIsRefused() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let folder = try TemporaryDirectory()
		let (prefix, other) = ("/test/\(uniqueKeyName("verified"))/", "/test/\(uniqueKeyName("other"))/")
		let stateFile = folder.file("app.plist.sync.json")
		let store = try Edge.freshStore(at: folder.file("app.plist"))
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["n"])
		try store.write("1", forKey: "n")
		#expect(store.flush())
		#expect(await engine.synchronize())
		var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any])
		json["prefix"] = other
		try JSONSerialization.data(withJSONObject: json).write(to: stateFile)
		await Self.expectUpdateRefused(of: store, stateFile: stateFile, keptFor: other)
	}

	/// An atomic update of `n` in `store`, whose state file is `other`'s, is refused, and leaves that state alone.
	static func expectUpdateRefused(of store: Defaults.FileStore, stateFile: URL, keptFor other: String) async {
		do {
			_ = try await Defaults.SyncEngine.atomicUpdate(forKey: "n", in: store) { $0 }
			Issue.record("made through another prefix's state")
		} catch let error as Defaults.SyncedUpdateError {
			#expect(error.reason == .refused, "\(error)")
			#expect(error.message.contains("one prefix only"), "\(error.message)")
		} catch {
			Issue.record("a raw error: \(error)")
		}
		#expect(SyncState.load(from: stateFile).state?.prefix == other, "the other prefix's state is left alone")
	}

	/// A state written before the prefix was kept (no `prefix`) loads, and takes the prefix of the engine that
	/// syncs through it, with no report.
	@Test func aStateWithoutAPrefixTakesTheEnginesPrefix() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let folder = try TemporaryDirectory()
		let prefix = "/test/\(uniqueKeyName("older"))/"
		let stateFile = folder.file("app.plist.sync.json")
		do {
			let store = try Edge.freshStore(at: folder.file("app.plist"))
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["a"])
			try store.write("1", forKey: "a")
			#expect(store.flush())
			#expect(await engine.synchronize())
		}
		var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stateFile)) as? [String: Any])
		#expect(json["prefix"] as? String == prefix)
		json["prefix"] = nil
		try JSONSerialization.data(withJSONObject: json).write(to: stateFile)
		#expect(SyncState.load(from: stateFile).state?.prefix == nil, "an older state loads")

		let store = try Edge.freshStore(at: folder.file("app.plist"))
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["a"])
		try store.write("2", forKey: "a")
		#expect(store.flush())
		#expect(await engine.synchronize())
		#expect(try await Edge.value(of: prefix + "a", in: remote) == "2")
		#expect(SyncState.load(from: stateFile).state?.prefix == prefix)
		#expect(FailureRecorder.failures(mentioning: prefix).isEmpty)
	}

	/// Moving an app to a new prefix, as the refusal says: with every engine of the old prefix stopped and the state
	/// file removed, the next engine joins the new prefix as a new machine and its values reach it; the old prefix is
	/// left as it was.
	@Test func aSettingsFileMovesToANewPrefixOnceItsStateFileIsRemoved() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		FailureRecorder.start()
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let folder = try TemporaryDirectory()
		let (old, new) = ("/test/\(uniqueKeyName("old"))/", "/test/\(uniqueKeyName("new"))/")
		let stateFile = folder.file("app.plist.sync.json")
		do {
			let store = try Edge.freshStore(at: folder.file("app.plist"))
			let engine = Defaults.SyncEngine(remote: remote, prefix: old, store: store)
			engine.add(["a", "b"])
			try store.write("1", forKey: "a")
			try store.write("2", forKey: "b")
			#expect(store.flush())
			#expect(await engine.synchronize())
			engine.stop()
		}
		let store = try Edge.freshStore(at: folder.file("app.plist"))
		let refused = Defaults.SyncEngine(remote: remote, prefix: new, store: store)
		refused.add(["a", "b"])
		#expect(await !refused.synchronize())
		let refusal = try #require(FailureRecorder.failures(mentioning: new).first { $0.reason == .unsupported })
		#expect(refusal.message.contains("remove \(stateFile.path)"), "says how to move: \(refusal.message)")
		refused.stop()

		try FileManager.default.removeItem(at: stateFile)
		let moved = Defaults.SyncEngine(remote: remote, prefix: new, store: store)
		moved.add(["a", "b"])
		#expect(await moved.synchronize())
		#expect(try await Edge.value(of: new + "a", in: remote) == "1")
		#expect(try await Edge.value(of: new + "b", in: remote) == "2")
		#expect(store.storedValue(forKey: "a") as? String == "1")
		#expect(store.storedValue(forKey: "b") as? String == "2")
		#expect(try await Edge.value(of: old + "a", in: remote) == "1", "the old prefix is left as it was")
		#expect(SyncState.load(from: stateFile).state?.prefix == new)
		moved.stop()
	}
}

/// A real remote whose next read of `key`, once armed, runs `hook` and answers as a remote below every revision the
/// machine saw (revision 1): the update reads the whole prefix then.
final class StampingRemote: RemoteWrapper {
	let wrapped: any Defaults.RemoteKeyValueService
	private let key: String
	private let hook: @Sendable () -> Void
	private let armed = Atomic<Bool>(false)

	init(wrapped: any Defaults.RemoteKeyValueService, key: String, hook: @escaping @Sendable () -> Void) {
		self.wrapped = wrapped
		self.key = key
		self.hook = hook
	}

	func arm() {
		armed.store(true, ordering: .relaxed)
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		var snapshot = try await wrapped.read(prefix: prefix)
		if prefix == key, armed.exchange(false, ordering: .relaxed) {
			hook()
			snapshot.revision = 1
		}
		return snapshot
	}
}
