import Defaults
import DefaultsEtcd
import Foundation
import Testing

#if canImport(FoundationNetworking)
	import FoundationNetworking
#endif

/// How a machine catches up after it stopped watching: from the next revision, or by reading everything when etcd
/// compacted that history away.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncResumeTests {
	@Test func aMachineThatWasAwayCatchesUpAlsoAfterACompaction() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let (writer, reader) = (Defaults.InMemoryStore(), Defaults.InMemoryStore())
		let writerSync = Defaults.SyncEngine(remote: remote, prefix: "/test/resume/", store: writer)
		let readerSync = Defaults.SyncEngine(remote: remote, prefix: "/test/resume/", store: reader)
		writerSync.add(["level", "other"])
		readerSync.add(["level", "other"])
		try writer.write(1, forKey: "level")
		#expect(await writerSync.synchronize())
		readerSync.start()
		#expect(try await eventually { reader.storedValue(forKey: "level") as? Int == 1 })

		// Away: several changes, then the history the reader would resume from is compacted.
		readerSync.stop()
		for level in 2...5 {
			try writer.write(level, forKey: "level")
			#expect(await writerSync.synchronize())
		}
		try writer.write("x", forKey: "other")
		#expect(await writerSync.synchronize())
		let revision = try await remote.read(prefix: "/").revision
		try await compact(etcd, to: revision)

		readerSync.start()
		defer { readerSync.stop() }
		#expect(try await eventually { reader.storedValue(forKey: "level") as? Int == 5 })
		#expect(reader.storedValue(forKey: "other") as? String == "x")
	}

	@Test func aKeyAddedWhileSyncingRunsGetsTheRemoteValueWithoutAnOutage() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let (writer, reader) = (Defaults.InMemoryStore(), Defaults.InMemoryStore())
		let writerSync = Defaults.SyncEngine(remote: remote, prefix: "/test/added/", store: writer)
		writerSync.add(["early", "late"])
		try writer.write("a", forKey: "early")
		try writer.write("b", forKey: "late")
		#expect(await writerSync.synchronize())

		let readerSync = Defaults.SyncEngine(remote: remote, prefix: "/test/added/", store: reader)
		defer { readerSync.stop() }
		readerSync.add(["early"])
		readerSync.start()
		#expect(try await eventually { reader.storedValue(forKey: "early") as? String == "a" })
		#expect(reader.storedValue(forKey: "late") == nil)
		readerSync.add(["late"])
		#expect(try await eventually { reader.storedValue(forKey: "late") as? String == "b" })
		#expect(readerSync.status.isConnected)
		#expect(readerSync.status.lastError == nil)
	}

	/// Every machine converges within 2 s of a heal: retries wait at most 1 s during an outage.
	@Test func aMachineIsConnectedAgainWithinTwoSecondsOfEtcdComingBack() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 2)
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/heal/", store: store)
		engine.add(["level"])
		engine.start()
		defer { engine.stop() }
		#expect(try await eventually { engine.status.isConnected })
		etcd.kill()
		#expect(try await eventually { !engine.status.isConnected })
		// Long enough for the retries to reach their longest wait.
		try await Task.sleep(for: .seconds(4))
		try await etcd.restart()
		let healed = ContinuousClock.now
		#expect(try await eventually { engine.status.isConnected })
		let elapsed = ContinuousClock.now - healed
		#expect(elapsed < .milliseconds(1500).scaledForSanitizer, "connected again \(elapsed) after etcd came back")
	}

	/// A watch on a member that stopped answering (a paused process keeps its connections open and silent) ends,
	/// so that the status says disconnected, and the machine is back once the member answers again.
	@Test func aMachineWatchingAStoppedMemberSaysItIsDisconnected() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 1)
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/test/paused/", store: Defaults.InMemoryStore())
		engine.add(["level"])
		engine.start()
		defer { engine.stop() }
		#expect(try await eventually { engine.status.isConnected })
		etcd.pause()
		let disconnected = try await eventually { !engine.status.isConnected }
		etcd.resume()
		#expect(disconnected)
		#expect(try await eventually { engine.status.isConnected })
	}

	private func eventually(_ condition: () -> Bool) async throws -> Bool {
		let deadline = Date().addingTimeInterval(TimeInterval(10 * sanitizerSlowdown))
		while Date() < deadline {
			if condition() {
				return true
			}
			try await Task.sleep(for: .milliseconds(20))
		}
		return false
	}

	private func compact(_ etcd: EtcdServer, to revision: Int64) async throws {
		var request = URLRequest(url: URL(string: etcd.endpoint + "/v3/kv/compaction")!)
		request.httpMethod = "POST"
		request.httpBody = Data(#"{"revision":"\#(revision)","physical":true}"#.utf8)
		let status = await withCheckedContinuation { continuation in
			URLSession.shared.dataTask(with: request) { _, response, _ in
				continuation.resume(returning: (response as? HTTPURLResponse)?.statusCode ?? 0)
			}.resume()
		}
		#expect(status == 200)
	}
}
