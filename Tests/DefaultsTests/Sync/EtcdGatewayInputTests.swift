import Foundation
import Synchronization
import Testing

@testable import Defaults
@testable import DefaultsEtcd

/// What the client and the engine do with what a gateway sends (issue 18, items 5, 8 and 9): each test here failed
/// before its fix.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct EtcdGatewayInputTests {
	static let noLeader =
		"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n\r\n"
		+ #"{"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14}"#

	@Test func aWatchAsksForAMemberWithALeaderAndMovesOnWhenRefused() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let leaderless = try FakeGateway { _ in Self.noLeader }
		defer { leaderless.stop() }
		let client = try EtcdClient(endpoints: [leaderless.endpoint, etcd.endpoint], requestTimeout: 2)

		var refused = false
		do {
			for try await _ in client.watch(prefix: "/test/leader/", fromRevision: 1) {}
		} catch {
			refused = true
		}
		#expect(refused)
		#expect(leaderless.requestHeads.first?.contains("Grpc-Metadata-Hasleader: true") == true)

		// The next watch goes to the member that has a leader, and is created there.
		var created = false
		for try await _ in client.watch(prefix: "/test/leader/", fromRevision: 1) {
			created = true
			break
		}
		#expect(created)
	}

	@Test func oneKeyThatIsNotBase64IsSkippedAndNamed() async throws {
		let kvs =
			#"{"header":{"revision":"7"},"kvs":[{"key":"%%%","value":"","mod_revision":"3"},"#
			+ #"{"key":"L3QvYQ==","value":"eA==","mod_revision":"4"}],"count":"2"}"#
		let gateway = try FakeGateway { _ in
			"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(kvs.utf8.count)\r\n\r\n" + kvs
		}
		defer { gateway.stop() }
		let client = try EtcdClient(endpoints: [gateway.endpoint], requestTimeout: 2)
		let snapshot = try await client.read(prefix: "/t/")
		#expect(snapshot.entries == [Defaults.RemoteEntry(key: "/t/a", value: Data("x".utf8), modRevision: 4)])
		#expect(snapshot.skipped.count == 1)
		#expect(snapshot.revision == 7)
	}

	/// A message that never closes costs time in proportion to its length, and ends the watch once past the bound.
	@Test func aWatchMessageThatNeverClosesIsReadInLinearTimeAndBounded() async throws {
		let (stream, continuation) = AsyncThrowingStream.makeStream(of: [Defaults.RemoteEvent].self)
		let watch = EtcdWatch(continuation: continuation, maximumMessageSize: 12 << 20) { _ in
			Defaults.RemoteServiceError.unreachable("ended")
		}
		_ = watch.receive(status: 200)
		watch.receive(Data(#"{"result":{"header":{"note":""#.utf8))
		let chunk = Data(repeating: UInt8(ascii: "a"), count: 16 << 10)
		let started = ContinuousClock.now
		for _ in 0..<512 {
			watch.receive(chunk)
		}
		let elapsed = ContinuousClock.now - started
		#expect(elapsed < .seconds(2), "8 MiB in 16 KiB chunks took \(elapsed)")
		for _ in 0..<512 {
			watch.receive(chunk)
		}
		await #expect(throws: Defaults.RemoteServiceError.self) {
			for try await _ in stream {}
		}
	}

	@Test func aRemoteThatAlwaysSaysCompactedIsNotReadInALoop() async throws {
		let remote = ScriptedRemote()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: Defaults.InMemoryStore())
		engine.add(["a"])
		let saidCompacted = Task {
			for await status in engine.statusUpdates where status.lastError?.contains("compacted") == true {
				return true
			}
			return false
		}
		engine.start()
		try await Task.sleep(for: .seconds(1))
		engine.stop()
		#expect(remote.reads.load(ordering: .relaxed) < 10)
		// The status said so at some point (a full read that works in between clears it again).
		let timeout = Task {
			try await Task.sleep(for: .seconds(5))
			saidCompacted.cancel()
		}
		#expect(await saidCompacted.value)
		timeout.cancel()
	}

	@Test func eventsOutsideThePrefixDoNotMoveTheRevision() async throws {
		let remote = ScriptedRemote()
		remote.watchEvents = [.put(.init(key: "/elsewhere/x", value: Data(), modRevision: 1000))]
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: Defaults.InMemoryStore())
		engine.add(["a"])
		engine.start()
		defer { engine.stop() }
		try await Task.sleep(for: .milliseconds(500))
		#expect(engine.status.revision == 10)
	}
}

/// A remote whose read answers revision 10 with nothing, and whose watch sends `watchEvents` (then stays open) or,
/// when there are none, says the history is compacted. It counts the reads and the writes it is asked for.
final class ScriptedRemote: Defaults.RemoteKeyValueService, @unchecked Sendable {
	let reads = Atomic<Int>(0)
	let writes = Atomic<Int>(0)
	var watchEvents: [Defaults.RemoteEvent] = []

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		reads.add(1, ordering: .relaxed)
		return Defaults.RemoteSnapshot(entries: [], revision: 10)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		writes.add(1, ordering: .relaxed)
		return .written(revision: 11)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		self.writes.add(writes.count, ordering: .relaxed)
		return 11
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		let events = watchEvents
		return AsyncThrowingStream { continuation in
			guard !events.isEmpty else {
				continuation.finish(throwing: Defaults.RemoteServiceError.compacted(5))
				return
			}
			continuation.yield([])
			continuation.yield(events)
		}
	}
}
