import Foundation
import Synchronization
import Testing

@testable import Defaults
@testable import DefaultsEtcd

/// What a write that went from member to member is reported as: a definite refusal as that refusal, unless a member
/// before it may have applied the write (then the outcome is unknown, and named so), and always with a reason.
@Suite(.scaledTimeLimit(minutes: 1)) struct EtcdFailoverOutcomeTests {
	static let tooLarge =
		#"{"error":"etcdserver: request is too large","message":"etcdserver: request is too large","code":3}"#
	static let denied = #"{"error":"etcdserver: permission denied","message":"etcdserver: permission denied","code":7}"#
	static let written = #"{"header":{"revision":"7"},"succeeded":true}"#

	/// A client whose members answer as `members` say, in order.
	static func client(_ members: [ScriptedMember]) throws -> EtcdClient {
		let endpoints = members.indices.map { "http://member-\($0):2379" }
		return try EtcdClient(endpoints: endpoints, requestTimeout: 2) { url in
			members[endpoints.firstIndex(of: url.absoluteString) ?? 0]
		}
	}

	static func writeError(_ client: EtcdClient) async -> Defaults.RemoteServiceError? {
		do {
			_ = try await client.compareAndSwap(key: "/t/k", value: Data("v".utf8), expectedModRevision: 0)
			return nil
		} catch {
			return error as? Defaults.RemoteServiceError
		}
	}

	/// The refusals a member may answer a write with, and what each is reported as.
	static let refusals: [(reply: ScriptedMember.Outcome, isTooLarge: Bool)] = [
		(.reply(400, tooLarge), true), (.reply(403, denied), false),
	]

	/// The first member refused the connection (it never got the write), the next refused the write itself: that
	/// refusal, not "unreachable" (before, any failure of the first member made the outcome unknown).
	@Test(arguments: 0..<2) func aRefusalAfterAMemberThatNeverGotTheWriteIsThatRefusal(refusal: Int) async throws {
		let (reply, isTooLarge) = Self.refusals[refusal]
		let client = try Self.client([
			ScriptedMember(.notSent("member-0:2379: Connection refused")), ScriptedMember(reply),
		])
		let error = await Self.writeError(client)
		switch error {
		case .valueTooLarge(let reason)? where isTooLarge:
			#expect(reason.contains("request is too large"))
		case .refused(let reason)? where !isTooLarge:
			#expect(reason.contains("permission denied"))
		default:
			Issue.record("reported as \(String(describing: error))")
		}
	}

	/// A member that was sent the write and did not answer may have applied it: the next member's refusal leaves the
	/// outcome unknown, and the message names both. That member answered, so the next try asks it first, and its
	/// refusal of that try is definite.
	@Test(arguments: 0..<2) func aRefusalAfterAMemberThatMayHaveAppliedTheWriteIsUnknownThenDefinite(
		refusal: Int
	) async throws {
		let (reply, isTooLarge) = Self.refusals[refusal]
		let silent = ScriptedMember(.noAnswer("member-0:2379: timed out waiting for the reply"))
		let client = try Self.client([silent, ScriptedMember(reply)])
		let first = await Self.writeError(client)
		guard case .unreachable(let reason)? = first else {
			Issue.record("reported as \(String(describing: first))")
			return
		}
		#expect(reason.contains("timed out waiting for the reply"), "\(reason)")
		#expect(reason.contains(isTooLarge ? "request is too large" : "permission denied"), "\(reason)")
		#expect(reason.contains("may have applied the write"), "\(reason)")

		let second = await Self.writeError(client)
		#expect(silent.requests.load(ordering: .relaxed) == 1, "the second try went to the member that answered")
		if isTooLarge {
			#expect(
				second.map { if case .valueTooLarge = $0 { true } else { false } } == true,
				"\(String(describing: second))")
		} else {
			#expect(
				second.map { if case .refused = $0 { true } else { false } } == true, "\(String(describing: second))")
		}
	}

	/// A first member that answered something that is not HTTP: the write's outcome is unknown, said with that
	/// answer (before: "the remote cannot be reached: ; then …", an empty reason).
	@Test func anUnreadableFirstAnswerIsNamed() async throws {
		let client = try Self.client([
			ScriptedMember(.unreadable("not an HTTP reply: SOMETHING ELSE")), ScriptedMember(.reply(200, Self.written)),
		])
		let error = try #require(await Self.writeError(client))
		#expect(!"\(error)".contains(": ;"), "\(error)")
		#expect("\(error)".contains("not an HTTP reply: SOMETHING ELSE"), "\(error)")
		#expect(!error.isRefusal, "unknown, not refused: the member may have applied it")
	}

	/// An answer that may come after the member proposed the write (a server error, etcd's "request timed out" or
	/// "leader changed"): the write may still commit, so the next member's refusal leaves the outcome unknown (before,
	/// it was reported refused). "no leader" is answered before anything is proposed: the refusal stands.
	@Test(arguments: [
		(503, #"{"error":"etcdserver: request timed out","message":"etcdserver: request timed out","code":14}"#, false),
		(503, #"{"error":"etcdserver: leader changed","message":"etcdserver: leader changed","code":14}"#, false),
		(504, #"{"message":"etcdserver: request timed out, possibly due to previous leader failure","code":4}"#, false),
		(502, "Bad Gateway", false),
		(503, #"{"error":"etcdserver: no leader","message":"etcdserver: no leader","code":14}"#, true),
	])
	func aRefusalAfterAnAnswerThatLeavesTheWriteOpenIsUnknown(status: Int, body: String, isRefusal: Bool) async throws {
		let client = try Self.client([ScriptedMember(.reply(status, body)), ScriptedMember(.reply(403, Self.denied))])
		let error = try #require(await Self.writeError(client))
		#expect(error.isRefusal == isRefusal, "\(error)")
		if !isRefusal {
			#expect("\(error)".contains("may have applied the write"), "\(error)")
		}
	}

	/// URLSession cannot tell a write that never left from one sent on a reused connection that died, after which
	/// libcurl connected again and was refused ("cannot connect"); FoundationNetworking counts no bytes sent for a
	/// task with a completion handler. A refused connection is "not sent" for a read, never for a write.
	@Test func urlSessionCallsNoWriteNotSent() async throws {
		let port = try EtcdServer.freePort()
		let transport = URLSessionGatewayTransport()
		func failure(_ path: String) async throws -> any Error {
			let request = GatewayRequest(
				url: try #require(URL(string: "https://127.0.0.1:\(port)\(path)")), body: Data("{}".utf8), token: nil,
				timeout: 10)
			do {
				let reply = try await transport.send(request)
				throw Defaults.RemoteServiceError.invalidResponse("an answer from a closed port: \(reply.status)")
			} catch {
				return error
			}
		}
		let read = try await failure("/v3/kv/range")
		#expect(read is GatewayRequestNotSent, "\(read)")
		let write = try await failure("/v3/kv/txn")
		#expect(!(write is GatewayRequestNotSent), "\(write)")
		guard case .unreachable? = write as? Defaults.RemoteServiceError else {
			Issue.record("reported as \(write)")
			return
		}
	}

	/// Every member unreachable, one before the write left and one after: each named.
	@Test func everyMembersFailureIsNamed() async throws {
		let client = try Self.client([
			ScriptedMember(.notSent("member-0:2379: Connection refused")),
			ScriptedMember(.noAnswer("member-1:2379: timed out waiting for the reply")),
		])
		let error = await Self.writeError(client)
		guard case .unreachable(let reason)? = error else {
			Issue.record("reported as \(String(describing: error))")
			return
		}
		#expect(reason == "member-0:2379: Connection refused; member-1:2379: timed out waiting for the reply")
	}
}

/// One member of a scripted cluster: every request it gets has the same outcome.
final class ScriptedMember: GatewayTransport {
	enum Outcome: Sendable {
		/// The request never left (a refused connection).
		case notSent(String)
		/// Sent, and no answer came (a timeout, a broken connection).
		case noAnswer(String)
		/// An answer that cannot be read as HTTP.
		case unreadable(String)
		/// An HTTP answer: its status and body.
		case reply(Int, String)
	}

	let outcome: Outcome
	/// How many requests it got.
	let requests = Atomic<Int>(0)

	init(_ outcome: Outcome) {
		self.outcome = outcome
	}

	func send(_ request: GatewayRequest) async throws -> GatewayReply {
		requests.add(1, ordering: .relaxed)
		switch outcome {
		case .notSent(let reason):
			throw GatewayRequestNotSent(error: .unreachable(reason))
		case .noAnswer(let reason):
			throw Defaults.RemoteServiceError.unreachable(reason)
		case .unreadable(let reason):
			throw Defaults.RemoteServiceError.invalidResponse(reason)
		case .reply(let status, let body):
			return GatewayReply(status: status, body: Data(body.utf8))
		}
	}

	func open(_ request: GatewayRequest, to receiver: any GatewayStreamReceiver) -> any GatewayStream {
		receiver.streamEnded(error: Defaults.RemoteServiceError.unreachable("a scripted member does not stream"))
		return EndedStream()
	}

	private struct EndedStream: GatewayStream {
		func cancel() {}
	}
}
