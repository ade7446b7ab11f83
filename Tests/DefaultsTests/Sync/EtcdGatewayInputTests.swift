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

	/// A member without a leader refuses the watch; the watch goes on at the next member, which creates it, without
	/// ending the consumer's stream (before, the stream ended and the engine reported an outage while a member answered).
	@Test func aWatchAsksForAMemberWithALeaderAndMovesOnWhenRefused() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let leaderless = try FakeGateway { _ in Self.noLeader }
		defer { leaderless.stop() }
		let client = try EtcdClient(endpoints: [leaderless.endpoint, etcd.endpoint], requestTimeout: 2)

		var created = false
		for try await _ in client.watch(prefix: "/test/leader/", fromRevision: 1) {
			created = true
			break
		}
		#expect(created)
		#expect(leaderless.requestHeads.first?.contains("Grpc-Metadata-Hasleader: true") == true)
	}

	/// A member whose watch stream ends (a killed member) is left for the next without ending the consumer's
	/// stream, and the next watch starts at the revision after the last event delivered, at a member that holds it.
	@Test func aWatchWhoseMemberStopsGoesOnAtTheNextFromTheRevisionAfterTheLastEvent() async throws {
		let key = Data("/test/failover/a".utf8).base64EncodedString()
		let value = Data("one".utf8).base64EncodedString()
		let head = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n"
		let created = #"{"result":{"header":{"revision":"7"},"created":true}}"#
		let ending = try FakeGateway { _ in
			head + created
				+ #"{"result":{"header":{"revision":"7"},"events":[{"kv":{"key":"\#(key)","value":"\#(value)","#
				+ #""create_revision":"7","mod_revision":"7","version":"1"}}]}}"#
		}
		defer { ending.stop() }
		// A member behind the revision the watch reached (catching up, or a cluster that lost its data) is passed over.
		let behind = try FakeGateway { path in
			head + (path.hasSuffix("/v3/kv/range") ? #"{"header":{"revision":"5"}}"# : created)
		}
		defer { behind.stop() }
		let next = try FakeGateway { path in
			head + (path.hasSuffix("/v3/kv/range") ? #"{"header":{"revision":"7"}}"# : created)
		}
		defer { next.stop() }
		let client = try EtcdClient(
			endpoints: [ending.endpoint, behind.endpoint, next.endpoint], requestTimeout: 2)

		var batches: [[Defaults.RemoteEvent]] = []
		for try await batch in client.watch(prefix: "/test/failover/", fromRevision: 3) {
			batches.append(batch)
			// The first member's created reply and event, then the next member's created reply.
			if batches.count == 3 {
				break
			}
		}
		#expect(batches.map(\.count) == [0, 1, 0])
		#expect(!behind.requestHeads.contains { $0.contains("/v3/watch") })
		let resumed = try #require(
			next.requestBodies.first { $0.contains("create_request") }.flatMap { body in
				(try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
			})
		#expect((resumed["create_request"] as? [String: Any])?["start_revision"] as? String == "8")
	}

	/// With no member that holds a watch, the stream ends (the engine's outage) once every member failed and the
	/// grace is over: an outage is not missed.
	@Test func aWatchEndsWhenNoMemberHoldsOneWithinTheGrace() async throws {
		let first = try FakeGateway { _ in Self.noLeader }
		defer { first.stop() }
		let second = try FakeGateway { _ in Self.noLeader }
		defer { second.stop() }
		let client = try EtcdClient(endpoints: [first.endpoint, second.endpoint], requestTimeout: 2)
		let started = ContinuousClock.now
		var error: (any Error)?
		do {
			for try await _ in client.watch(prefix: "/test/none/", fromRevision: 1) {}
		} catch let caught {
			error = caught
		}
		let elapsed = ContinuousClock.now - started
		guard case .unreachable(let reason) = error as? Defaults.RemoteServiceError else {
			Issue.record("the watch ended with \(String(describing: error))")
			return
		}
		#expect(reason.contains(first.endpoint) && reason.contains(second.endpoint))
		// Not before the grace (1 s), and then at once: the fake members answer at once, which leaves 9 s for a busy
		// machine. A watch that never ended would run into the test's time limit instead.
		#expect(elapsed >= EtcdClient.watchFailoverGrace && elapsed < .seconds(10))
	}

	/// A write sent to a member that never answers (it may have applied it) and then refused by the next one (no
	/// permission there, say): the refusal is no "nothing changed", as the first member may have committed, so the
	/// client reports the write as unanswered; a read refused the same way stays a refusal.
	@Test func aWriteRefusedByTheNextMemberAfterOneGaveNoAnswerIsNoRefusal() async throws {
		let silent = try EtcdServer.loopbackSocket(listening: true)
		defer { close(silent.descriptor) }
		let refusing = try FakeGateway { _ in
			"HTTP/1.0 403 Forbidden\r\nContent-Type: application/json\r\n\r\n"
				+ #"{"error":"etcdserver: permission denied","message":"etcdserver: permission denied","code":7}"#
		}
		defer { refusing.stop() }
		let client = try EtcdClient(
			endpoints: ["http://127.0.0.1:\(silent.port)", refusing.endpoint], requestTimeout: 0.5)
		let write = Defaults.RemoteWrite(key: "/test/unanswered/a", value: Data("1".utf8), expectedModRevision: 0)
		await #expect {
			_ = try await client.compareAndSwap(all: [write])
		} throws: { error in
			guard case .unreachable(let reason) = error as? Defaults.RemoteServiceError else {
				return false
			}
			return reason.contains("permission denied") && reason.contains("may have applied the write")
		}
		await #expect {
			_ = try await client.read(prefix: "/test/unanswered/")
		} throws: { error in
			if case .refused = error as? Defaults.RemoteServiceError { true } else { false }
		}
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
	///
	/// Linear time is shown by a ratio within one run, not by a wall-clock bound (which a thread-sanitizer run missed):
	/// a chunk read into a message already 3.5 MiB long takes about as long as one of the first 32, fastest against
	/// fastest. Were each chunk to rescan the message so far, the later ones would take tens of times as long.
	@Test func aWatchMessageThatNeverClosesIsReadInLinearTimeAndBounded() async throws {
		let chunk = Data(repeating: UInt8(ascii: "a"), count: 16 << 10)
		func unclosedWatch(
			maximumMessageSize: Int
		) -> (EtcdWatch, AsyncThrowingStream<[Defaults.RemoteEvent], any Error>) {
			let (stream, continuation) = AsyncThrowingStream.makeStream(of: [Defaults.RemoteEvent].self)
			let watch = EtcdWatch(continuation: continuation, maximumMessageSize: maximumMessageSize) { _ in
				Defaults.RemoteServiceError.unreachable("ended")
			}
			_ = watch.receive(status: 200)
			watch.receive(Data(#"{"result":{"header":{"note":""#.utf8))
			return (watch, stream)
		}
		// The fastest chunk of 32: a pause of a busy machine lengthens the chunks it falls on, never all of them, while
		// a rescan would lengthen every later one.
		func fastestOf32Chunks(_ watch: EtcdWatch) -> Duration {
			var fastest = Duration.seconds(1000)
			for _ in 0..<32 {
				let started = ContinuousClock.now
				watch.receive(chunk)
				fastest = min(fastest, ContinuousClock.now - started)
			}
			return fastest
		}
		var (early, late) = (Duration.seconds(1000), Duration.seconds(1000))
		for _ in 0..<3 {
			let (watch, _) = unclosedWatch(maximumMessageSize: 12 << 20)
			early = min(early, fastestOf32Chunks(watch))
			for _ in 32..<224 {
				watch.receive(chunk)
			}
			late = min(late, fastestOf32Chunks(watch))
		}
		#expect(late < early * 4, "a chunk took \(early) at the start of the message and \(late) after 3.5 MiB")

		let (bounded, stream) = unclosedWatch(maximumMessageSize: 1 << 20)
		for _ in 0..<128 {
			bounded.receive(chunk)
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
		let started = ContinuousClock.now
		engine.start()
		// A full read, then one after each "compacted": the second comes at once, the next ones after waits of 0.1,
		// 0.2 and 0.4 s. Reads in a loop would reach five within milliseconds. A busy machine only lengthens this.
		let deadline = started + .seconds(30)
		while remote.reads.load(ordering: .relaxed) < 5, ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(10))
		}
		let elapsed = ContinuousClock.now - started
		engine.stop()
		#expect(remote.reads.load(ordering: .relaxed) >= 5)
		#expect(elapsed >= .milliseconds(600), "five reads of the prefix in \(elapsed)")
		// The status said so at some point (a full read that works in between clears it again).
		// A limit far away, for a status that has come by now.
		let timeout = Task {
			try await Task.sleep(for: .seconds(30).scaledForSanitizer)
			saidCompacted.cancel()
		}
		#expect(await saidCompacted.value)
		timeout.cancel()
	}

	@Test func eventsOutsideThePrefixDoNotMoveTheRevision() async throws {
		let remote = ScriptedRemote()
		// The key under the prefix comes last in the batch: once it is applied, the whole batch was.
		remote.watchEvents = [
			.put(.init(key: "/elsewhere/x", value: Data(), modRevision: 1000)),
			.put(.init(key: "/p/a", value: try SyncedValueCoding.encode("marker"), modRevision: 11)),
		]
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: Defaults.InMemoryStore())
		engine.add(["a"])
		engine.start()
		defer { engine.stop() }
		for await status in engine.statusUpdates where status.revision > 10 {
			break
		}
		#expect(engine.status.revision == 11)
	}
}

/// A remote whose read answers revision 10 with nothing, and whose watch sends `watchEvents` (then stays open) or,
/// when there are none, says the history is compacted. It counts the reads and the writes of synced keys it is asked
/// for (not the prefix's epoch key, which every read here makes again, since it finds none).
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
		self.writes.add(writes.filter { !$0.isEpoch }.count, ordering: .relaxed)
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
