import Foundation
import Synchronization
import Testing

@testable import Defaults
@testable import DefaultsEtcd

/// A request a member will not answer is given up before its timeout once the member shows it (it stopped
/// answering, or its leader changed while the request waited), and goes to the next member; a slow answer of a member
/// that keeps its leader is waited for. Scripted transports, one per member.
@Suite(.scaledTimeLimit(minutes: 1)) struct EtcdLostRequestTests {
	/// One member, scripted: how it answers a write (`txn`) and the check's read (`range`, by how many came before).
	final class ScriptedMember: GatewayTransport, @unchecked Sendable {
		enum Answer {
			case reply(String)
			/// Never answers: the request waits out its timeout.
			case silence
			/// Answers once the member's state was read `count` times (the test's own read and the client's checks),
			/// so that a slow answer lives through a known number of checks however slow the machine; a request that
			/// gets no more checks runs out its timeout (`writesWaitedOut`).
			case afterReads(Int, String)
		}

		let write: @Sendable (Int) -> Answer
		let read: @Sendable (Int) -> Answer
		/// How it answers a client with credentials asking for a token (`/v3/auth/authenticate`).
		let authentication: Answer
		let counts = Mutex<[String: Int]>([:])
		/// Silent writes that ran their whole timeout, rather than being given up (cancelled) by the client. (The
		/// check's own read to a silent member is meant to run out: its timeout is the check's.)
		let writesWaitedOut = Mutex(0)
		/// Silent token fetches that ran their whole timeout.
		let authenticationsWaitedOut = Mutex(0)

		init(
			write: @escaping @Sendable (Int) -> Answer, authentication: Answer = .reply(#"{"token":"t"}"#),
			read: @escaping @Sendable (Int) -> Answer
		) {
			self.write = write
			self.authentication = authentication
			self.read = read
		}

		convenience init(
			write: Answer, authentication: Answer = .reply(#"{"token":"t"}"#), read: @escaping @Sendable (Int) -> Answer
		) {
			self.init(write: { _ in write }, authentication: authentication, read: read)
		}

		func count(_ path: String) -> Int { counts.withLock { $0[path, default: 0] } }

		func send(_ request: GatewayRequest) async throws -> GatewayReply {
			let path = request.url.path()
			let earlier = counts.withLock { counts in
				defer { counts[path, default: 0] += 1 }
				return counts[path, default: 0]
			}
			let answer =
				path.hasSuffix("/v3/kv/txn")
				? write(earlier) : path.hasSuffix("/v3/auth/authenticate") ? authentication : read(earlier)
			switch answer {
			case .reply(let body):
				return GatewayReply(status: 200, body: Data(body.utf8))
			case .afterReads(let reads, let body):
				let deadline = ContinuousClock.now + .seconds(request.timeout ?? 60)
				while count("/v3/kv/range") < reads {
					guard ContinuousClock.now < deadline else {
						writesWaitedOut.withLock { $0 += 1 }
						throw Defaults.RemoteServiceError.unreachable("\(request.url.absoluteString): timed out")
					}
					try await Task.sleep(for: .milliseconds(10))
				}
				return GatewayReply(status: 200, body: Data(body.utf8))
			case .silence:
				try await Task.sleep(for: .seconds(request.timeout ?? 60))
				if path.hasSuffix("/v3/kv/txn") { writesWaitedOut.withLock { $0 += 1 } }
				if path.hasSuffix("/v3/auth/authenticate") { authenticationsWaitedOut.withLock { $0 += 1 } }
				throw Defaults.RemoteServiceError.unreachable("\(request.url.absoluteString): timed out")
			}
		}

		func open(_ request: GatewayRequest, to receiver: any GatewayStreamReceiver) -> any GatewayStream {
			receiver.streamEnded(error: Defaults.RemoteServiceError.unreachable("no watch here"))
			return NoStream()
		}

		struct NoStream: GatewayStream {
			func cancel() {}
		}
	}

	static func header(term: Int) -> String {
		#"{"header":{"revision":"9","raft_term":"\#(term)"}"#
	}

	static let written = #"{"header":{"revision":"9","raft_term":"3"},"succeeded":true}"#

	/// Far above the check's few seconds even on a loaded machine, so a request the client did not give up shows as
	/// `writesWaitedOut`, not as a slow run.
	static let requestTimeout: TimeInterval = 30

	func client(_ members: [ScriptedMember], credentials: EtcdClient.Credentials? = nil) throws -> EtcdClient {
		try EtcdClient(
			endpoints: members.indices.map { "http://127.0.0.1:\(40000 + $0)" }, credentials: credentials,
			requestTimeout: Self.requestTimeout, transport: { url in members[(url.port ?? 40000) - 40000] })
	}

	func write(with client: EtcdClient) async throws -> Defaults.RemoteWriteResult {
		try await client.compareAndSwap(key: "/lost/a", value: Data("1".utf8), expectedModRevision: 0)
	}

	/// A follower that forwarded the write to a leader that stopped: it answers the check, first in the old term,
	/// then in the new leader's, and the write is sent to it again, where the new leader answers it. Before, the
	/// write waited out its whole timeout.
	@Test func aWriteWhoseMembersLeaderChangedIsSentToItAgain() async throws {
		let follower = ScriptedMember(write: { sent in sent == 0 ? .silence : .reply(Self.written) }) { checks in
			.reply(Self.header(term: checks == 0 ? 2 : 3) + "}")
		}
		let next = ScriptedMember(write: .reply(Self.written)) { _ in .reply(Self.header(term: 3) + "}") }
		let result = try await write(with: try client([follower, next]))
		#expect(result == .written(revision: 9))
		#expect(follower.writesWaitedOut.withLock { $0 } == 0)
		#expect(follower.count("/v3/kv/txn") == 2)
		#expect(next.count("/v3/kv/txn") == 0)
	}

	/// A member that stopped (a paused process) answers neither the write nor the check.
	@Test func aWriteToAMemberThatStoppedGoesToTheNextMember() async throws {
		let stopped = ScriptedMember(write: .silence) { _ in .silence }
		let next = ScriptedMember(write: .reply(Self.written)) { _ in .reply(Self.header(term: 3) + "}") }
		let result = try await write(with: try client([stopped, next]))
		#expect(result == .written(revision: 9))
		#expect(stopped.writesWaitedOut.withLock { $0 } == 0)
		#expect(stopped.count("/v3/kv/txn") == 1 && next.count("/v3/kv/txn") == 1)
	}

	/// A slow write of a member that keeps its leader (and one in an election, answering "no leader") is waited for:
	/// sent once, answered by its member after two checks (the first answered "no leader", the second in the term the
	/// client knew). The answer waits for the checks, not for a time: a loaded machine made only one check in 2.5 s.
	@Test func aSlowWriteOfAMemberThatKeepsItsLeaderIsWaitedFor() async throws {
		let noLeader = #"{"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14}"#
		let slow = ScriptedMember(write: .afterReads(3, Self.written)) { checks in
			checks == 1 ? .reply(noLeader) : .reply(Self.header(term: 3) + "}")
		}
		let next = ScriptedMember(write: .reply(Self.written)) { _ in .reply(Self.header(term: 3) + "}") }
		let client = try client([slow, next])
		// The client heard term 3 before it sent the write.
		_ = try await client.read(prefix: "/lost/")
		let result = try await write(with: client)
		#expect(result == .written(revision: 9))
		#expect(slow.count("/v3/kv/range") >= 3)
		#expect(slow.writesWaitedOut.withLock { $0 } == 0 && slow.count("/v3/kv/txn") == 1)
		#expect(next.count("/v3/kv/txn") == 0)
	}

	/// A client with credentials fetches its token from the member it asks first: one that stopped answers neither
	/// the fetch nor the check, and the fetch goes to the next member, as any other request does. Before, the fetch
	/// alone went to the transport directly and waited out its whole timeout.
	@Test func aTokenFetchFromAMemberThatStoppedGoesToTheNextMember() async throws {
		let stopped = ScriptedMember(write: .silence, authentication: .silence) { _ in .silence }
		let next = ScriptedMember(write: .reply(Self.written)) { _ in .reply(Self.header(term: 3) + "}") }
		let client = try client([stopped, next], credentials: .init(user: "u", password: "p"))
		let result = try await write(with: client)
		#expect(result == .written(revision: 9))
		#expect(stopped.authenticationsWaitedOut.withLock { $0 } == 0)
		#expect(stopped.count("/v3/auth/authenticate") == 1 && next.count("/v3/auth/authenticate") == 1)
		#expect(stopped.count("/v3/kv/txn") == 0 && next.count("/v3/kv/txn") == 1)
	}

	#if canImport(Glibc)
		/// A caller cancelled while its token is fetched from a member that answers the check and never the fetch
		/// ends at once, as with any other request (a session restart, `stop()`, a cancelled `synchronize()`): the
		/// socket transport's own wait cannot be cancelled. Before, the fetch went to the transport directly and its
		/// caller waited out the request's timeout, then failed as unreachable.
		@Test func aCallerCancelledWhileItsTokenIsFetchedEndsAtOnce() async throws {
			let gateway = try FakeGateway { path, _ in
				path == "/v3/kv/range" ? EtcdErrorMessageTests.reply("200 OK", Self.header(term: 3) + "}") : nil
			}
			defer { gateway.stop() }
			let client = try EtcdClient(
				endpoints: [gateway.endpoint], credentials: .init(user: "u", password: "p"),
				requestTimeout: Self.requestTimeout)
			let writing = Task { try await write(with: client) }
			while !gateway.requestHeads.contains(where: { $0.hasPrefix("POST /v3/auth/authenticate") }) {
				try await Task.sleep(for: .milliseconds(10))
			}
			writing.cancel()
			let result = await writing.result
			#expect(throws: CancellationError.self) { try result.get() }
		}
	#endif
}
