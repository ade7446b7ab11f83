import Defaults
import Foundation
import Synchronization

/// An etcd v3 cluster, spoken to through etcd's HTTP/JSON gateway: the remote that synced settings travel through.
///
/// It is a library of its own, `DefaultsEtcd`, so that apps that do not sync do not link `FoundationNetworking`
/// (and with it libcurl) on Linux.
///
/// ```swift
/// import Defaults
/// import DefaultsEtcd
///
/// let etcd = try EtcdClient(
/// 	endpoints: ["https://etcd-1:2379", "https://etcd-2:2379", "https://etcd-3:2379"],
/// 	credentials: .init(user: "editor", password: secret))
/// Defaults.iCloud.configure(remote: etcd, prefix: "/defaults/editor/")
/// ```
///
/// Requests go to one endpoint; when it cannot be reached the next one is tried, and the one that answered is used
/// from then on. With credentials, a token from `/v3/auth/authenticate` is sent with every request and fetched
/// again (and the request retried once) when etcd no longer accepts it. etcd's refusals reach the app as a
/// ``/Defaults/Defaults/Failure`` and in ``/Defaults/Defaults/SyncStatus/lastError``, with etcd's own sentence.
///
/// https endpoints go through `URLSession` and are verified against the system's trusted certificates (on Linux: add
/// a private CA to the system store, `update-ca-certificates`; Foundation on Linux has no per-session CA). On Linux,
/// plain-http endpoints are spoken to in HTTP/1.0 on a socket: FoundationNetworking traps on the HTTP trailer that
/// etcd 3.4's gateway ends every error reply with on plain http.
public final class EtcdClient: Defaults.RemoteKeyValueService {
	/// A user name and password for etcd's authentication.
	public struct Credentials: Sendable {
		/// The etcd user.
		public var user: String
		/// The user's password.
		public var password: String

		/// Creates credentials.
		public init(user: String, password: String) {
			self.user = user
			self.password = password
		}
	}

	/// Errors in the client's set-up.
	public enum ConfigurationError: Error, Equatable, CustomStringConvertible, LocalizedError {
		/// No endpoint was given, or one is not an http(s) URL.
		case invalidEndpoint(String)

		/// What is wrong with the endpoint, and how to write one etcd answers at.
		public var description: String {
			switch self {
			case .invalidEndpoint("no endpoint given"):
				return "No etcd endpoint was given: pass at least one, such as \"http://127.0.0.1:2379\"."
			case .invalidEndpoint(let endpoint) where !endpoint.contains("://"):
				return
					"The etcd endpoint \"\(endpoint)\" has no scheme: write it as a URL, such as \"http://\(endpoint)\" (or https:// for TLS)."
			case .invalidEndpoint(let endpoint):
				return
					"The etcd endpoint \"\(endpoint)\" is not an http:// or https:// URL with a host: write it as \"http://<host>:<port>\", such as \"http://127.0.0.1:2379\"."
			}
		}

		/// The same sentence as ``description``, for `localizedDescription`.
		public var errorDescription: String? {
			description
		}
	}

	/// The endpoints, tried in order starting with the one that last answered.
	public let endpoints: [URL]
	/// How long one request may take before the next endpoint is tried.
	public let requestTimeout: TimeInterval
	let credentials: Credentials?
	/// One per endpoint, in the same order.
	let transports: [any GatewayTransport]
	let preferred = Atomic<Int>(0)
	let token = LockedState<String?>(nil)
	/// The highest raft term an answer's header carried (0: none yet), see
	/// ``sendCheckingMember(_:endpoint:unanswered:)``.
	let knownTerm = Atomic<Int64>(0)
	/// How many tokens the client fetched: one, plus one per renewal.
	let authentications = Atomic<Int>(0)

	/// Creates a client for the cluster at `endpoints`, such as `["http://127.0.0.1:2379"]`.
	///
	/// - Throws: ``ConfigurationError/invalidEndpoint(_:)`` for an empty list or an endpoint that is not http(s).
	public init(endpoints: [String], credentials: Credentials? = nil, requestTimeout: TimeInterval = 5) throws {
		let urls = try Self.urls(of: endpoints)
		self.endpoints = urls
		self.credentials = credentials
		self.requestTimeout = requestTimeout
		self.transports = urls.map(gatewayTransport(for:))
	}

	/// A client that reaches each endpoint through `transport(endpoint)` (tests script a cluster's answers this way).
	init(
		endpoints: [String], credentials: Credentials? = nil, requestTimeout: TimeInterval = 5,
		transport: (URL) -> any GatewayTransport
	) throws {
		let urls = try Self.urls(of: endpoints)
		self.endpoints = urls
		self.credentials = credentials
		self.requestTimeout = requestTimeout
		self.transports = urls.map(transport)
	}

	/// `endpoints` as URLs, each checked.
	private static func urls(of endpoints: [String]) throws -> [URL] {
		let urls = try endpoints.map { text in
			guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
				throw ConfigurationError.invalidEndpoint(text)
			}
			return url
		}
		guard !urls.isEmpty else {
			throw ConfigurationError.invalidEndpoint("no endpoint given")
		}
		return urls
	}

	// MARK: RemoteKeyValueService

	/// Every key under `prefix` (`/v3/kv/range`).
	package func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		let answer = try await call(
			"/v3/kv/range", ["key": Self.base64(prefix), "range_end": Self.base64(Self.rangeEnd(of: prefix))])
		// One key etcd's gateway sends in a form this client cannot read is skipped and named, not a reason to read
		// nothing at all.
		var entries: [Defaults.RemoteEntry] = []
		var skipped: [String] = []
		for kv in answer["kvs"] as? [[String: Any]] ?? [] {
			do {
				entries.append(try Self.entry(kv))
			} catch {
				skipped.append("\(error)")
			}
		}
		let revision = Self.revision(of: answer)
		guard revision >= 0 else {
			throw Defaults.RemoteServiceError.invalidResponse("/v3/kv/range: a negative revision \(revision)")
		}
		return Defaults.RemoteSnapshot(entries: entries, revision: revision, skipped: skipped)
	}

	/// A transaction (`/v3/kv/txn`): if the key's mod revision is `expectedModRevision`, put or delete it; otherwise
	/// read it.
	package func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws
		-> Defaults.RemoteWriteResult
	{
		let encodedKey = Self.base64(key)
		let operation: [String: Any] =
			if let value {
				["request_put": ["key": encodedKey, "value": value.base64EncodedString()]]
			} else {
				["request_delete_range": ["key": encodedKey]]
			}
		let answer = try await call(
			"/v3/kv/txn",
			[
				"compare": [
					[
						"key": encodedKey, "target": "MOD", "result": "EQUAL",
						"mod_revision": String(expectedModRevision),
					]
				],
				"success": [operation],
				"failure": [["request_range": ["key": encodedKey]]],
			])
		if answer["succeeded"] as? Bool == true {
			return .written(revision: Self.revision(of: answer))
		}
		let responses = answer["responses"] as? [[String: Any]] ?? []
		let range = responses.first?["response_range"] as? [String: Any]
		let current = try (range?["kvs"] as? [[String: Any]])?.first.map(Self.entry)
		return .conflict(current: current)
	}

	/// One transaction (`/v3/kv/txn`) that compares every key's mod revision and, if all match, writes all but those
	/// only compared.
	package func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		guard !writes.isEmpty else {
			return nil
		}
		let compares = writes.map { write -> [String: Any] in
			[
				"key": Self.base64(write.key), "target": "MOD", "result": "EQUAL",
				"mod_revision": String(write.expectedModRevision),
			]
		}
		let operations = writes.filter { !$0.isComparedOnly }.map { write -> [String: Any] in
			if let value = write.value {
				return ["request_put": ["key": Self.base64(write.key), "value": value.base64EncodedString()]]
			}
			return ["request_delete_range": ["key": Self.base64(write.key)]]
		}
		let answer = try await call("/v3/kv/txn", ["compare": compares, "success": operations])
		return answer["succeeded"] as? Bool == true ? Self.revision(of: answer) : nil
	}

	/// A streamed watch (`/v3/watch`) of `prefix` from `revision`, on one member at a time: a member that stops (its
	/// stream ends or breaks, it refuses the watch as having no leader, or it stops answering the watch check) is left
	/// for the next, and the watch goes on there from the revision after the last event delivered. The stream ends
	/// with an error only when no member holds a watch within ``watchFailoverGrace``, or for an error another member
	/// would answer the same (a refusal, a compacted history).
	package func watch(
		prefix: String, fromRevision revision: Int64
	) -> AsyncThrowingStream<
		[Defaults.RemoteEvent], any Error
	> {
		let (stream, continuation) = AsyncThrowingStream.makeStream(of: [Defaults.RemoteEvent].self)
		// Set first: a consumer may stop before the request is even made (while a token is fetched), and its
		// termination must still reach the stream opened after that.
		let running = RunningWatch()
		continuation.onTermination = { _ in running.end() }
		let task = Task {
			do {
				try await followWatch(prefix: prefix, from: revision, into: continuation, running: running)
			} catch is CancellationError {
				// The consumer stopped: nothing left to watch.
			} catch {
				continuation.finish(throwing: error)
			}
		}
		running.attach(task)
		return stream
	}

	/// One watch on member `index` from `revision`, its batches passed on to `continuation`, until it ends: returns how
	/// it ended, whether the member created the watch, and the revision to go on from.
	func watchOnce(
		_ index: Int, prefix: String, from revision: Int64,
		into continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation, running: RunningWatch
	) async -> (error: any Error, answered: Bool, next: Int64) {
		var next = revision
		var answered = false
		do {
			let body: [String: Any] = [
				"create_request": [
					"key": Self.base64(prefix), "range_end": Self.base64(Self.rangeEnd(of: prefix)),
					"start_revision": String(revision), "progress_notify": true,
				]
			]
			let request = try await makeRequest(endpoint: index, path: "/v3/watch", body: body)
			let (events, member) = AsyncThrowingStream.makeStream(of: [Defaults.RemoteEvent].self)
			let watch = EtcdWatch(continuation: member) { [weak self] ending in
				guard let self else {
					return Defaults.RemoteServiceError.unreachable("the etcd client was released")
				}
				let endpoint = self.endpoints[index].absoluteString
				return switch ending {
				case .closed:
					Defaults.RemoteServiceError.unreachable("\(endpoint): the watch stream ended")
				case .broken(let error):
					Defaults.RemoteServiceError.unreachable("\(endpoint): the watch stream broke: \(error)")
				case .errorReply(let status, let body):
					// A member without a leader refuses the watch (or ends it) as unavailable: unreachable.
					self.failure(
						status: status, reply: body, path: "/v3/watch", endpoint: index, sentToken: request.token
					).error
				case .cancelled(let reason):
					self.failure(
						status: 0, message: "etcd cancelled the watch: \(reason)", code: nil, path: "/v3/watch",
						endpoint: index, sentToken: request.token
					).error
				}
			}
			let opened = transports[index].open(request, to: watch)
			running.attach(opened)
			let check = Task {
				try await checkWatchedMember(index, prefix: prefix, until: member)
			}
			defer {
				check.cancel()
				opened.cancel()
			}
			for try await batch in events {
				answered = true
				for event in batch {
					switch event {
					case .put(let entry): next = max(next, entry.modRevision + 1)
					case .delete(_, let modRevision): next = max(next, modRevision + 1)
					}
				}
				continuation.yield(batch)
			}
			try Task.checkCancellation()
			return (Defaults.RemoteServiceError.unreachable("the watch ended"), answered, next)
		} catch {
			return (error, answered, next)
		}
	}

	// MARK: Requests

	private func call(_ path: String, _ body: [String: Any]) async throws -> [String: Any] {
		// Each endpoint's failure, so that the error names what failed where, not only the last one tried.
		var failures: [String] = []
		// Whether a member that got a write may have applied it: no answer (a timeout, a broken connection), or one
		// that leaves it open (a server error, "request timed out"); not a member whose connection was refused, which
		// never got it, nor one that answered "no leader".
		let unanswered = Unanswered()
		let start = preferred.load(ordering: .relaxed)
		var resentTo: Set<Int> = []
		var offset = 0
		while offset < endpoints.count {
			let index = (start + offset) % endpoints.count
			do {
				let answer = try await call(path, body, endpoint: index, renewingToken: true, unanswered: unanswered)
				if offset != 0 {
					preferred.store(index, ordering: .relaxed)
				}
				return answer
			} catch let error as LeaderChanged {
				// Once per member: it has a new leader, which a forwarded request never reached.
				failures.append(error.reason)
				if resentTo.insert(index).inserted {
					continue
				}
			} catch let error as Defaults.RemoteServiceError {
				switch error {
				case .unreachable(let reason):
					// The next member.
					failures.append(reason)
				case .refused, .valueTooLarge:
					// A member answered, and is asked first from now on: a member before it that keeps timing out
					// would otherwise make every later try of this request unknown again.
					if offset != 0 {
						preferred.store(index, ordering: .relaxed)
					}
					// The next member's refusal says nothing of what an earlier one did with the write: it is no
					// "nothing changed", so that the caller (an atomic update) asks again rather than retry blindly.
					if path == "/v3/kv/txn", unanswered.isSet {
						throw Defaults.RemoteServiceError.unreachable(
							(failures.isEmpty ? "a member gave no answer" : failures.joined(separator: "; "))
								+ "; then \(error), while a member that did not answer may have applied the write")
					}
					throw error
				case .invalidResponse, .compacted:
					// An answer that says nothing of the outcome: unknown already, named as it is.
					throw error
				}
			}
			offset += 1
		}
		throw Defaults.RemoteServiceError.unreachable(
			failures.isEmpty ? "no endpoint answered" : failures.joined(separator: "; "))
	}

	/// Set once a request was sent and no answer came back, or an answer that leaves its outcome unknown: the member
	/// may have applied it.
	final class Unanswered: @unchecked Sendable {
		// Touched by one request's calls, one at a time.
		private(set) var isSet = false

		func set() {
			isSet = true
		}
	}

	func call(
		_ path: String, _ body: [String: Any], endpoint index: Int, renewingToken: Bool,
		unanswered: Unanswered? = nil
	) async throws
		-> [String: Any]
	{
		let request = try await makeRequest(endpoint: index, path: path, body: body)
		let reply = try await sendCheckingMember(request, endpoint: index, unanswered: unanswered)
		if reply.status == 200 {
			guard let object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any] else {
				throw Defaults.RemoteServiceError.invalidResponse(
					"\(endpoints[index].absoluteString)\(path): \(Self.quoted(reply.body)) where etcd's v3 gateway sends a JSON object"
				)
			}
			noteTerm(of: object)
			return object
		}
		let failure = failure(
			status: reply.status, reply: reply.body, path: path, endpoint: index, sentToken: request.token)
		if failure.isTokenRefused, renewingToken {
			return try await call(path, body, endpoint: index, renewingToken: false, unanswered: unanswered)
		}
		// A server error, "unavailable" or "deadline exceeded" ("request timed out", "leader changed") may come after
		// the member proposed the write, which may still commit: its outcome is unknown, as with no answer. Not "no
		// leader", refused before anything is proposed.
		if path == "/v3/kv/txn", case .unreachable(let reason) = failure.error, !reason.contains("no leader") {
			unanswered?.set()
		}
		throw failure.error
	}

	/// `request`'s reply from endpoint `index`. A failure after the request may have left (sent, with no answer or
	/// one that cannot be read) sets `unanswered`; one before it (``GatewayRequestNotSent``) does not.
	func send(
		_ request: GatewayRequest, endpoint index: Int, unanswered: Unanswered? = nil
	) async throws -> GatewayReply {
		do {
			return try await transports[index].send(request)
		} catch let notSent as GatewayRequestNotSent {
			throw notSent.error
		} catch {
			unanswered?.set()
			throw error as? Defaults.RemoteServiceError
				?? .unreachable("\(endpoints[index].absoluteString): \(error)")
		}
	}

	/// `text` as a clause inside a sentence: one line, without the surrounding white space or a final full stop.
	static func clause(_ text: String) -> String {
		var clause = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
			.filter { !$0.isEmpty }.joined(separator: " ")
		while clause.hasSuffix(".") {
			clause.removeLast()
		}
		return clause
	}

	/// A reply body as a message quotes it: its first 200 bytes as one clause, or "an empty reply".
	static func quoted(_ body: Data) -> String {
		let text = clause(String(decoding: body.prefix(200), as: UTF8.self))
		return text.isEmpty ? "an empty reply" : "\"\(text)\""
	}

	/// What an answer other than 200 means, from etcd's JSON error (`{"error", "message", "code"}` with a gRPC code).
	///
	/// A token etcd no longer accepts (expired, or issued before a change of roles) is forgotten here, so that the
	/// next request authenticates again.
	func failure(
		status: Int, reply: Data, path: String, endpoint index: Int, sentToken: String?
	) -> (
		error: Defaults.RemoteServiceError, isTokenRefused: Bool
	) {
		let object = (try? JSONSerialization.jsonObject(with: reply)) as? [String: Any] ?? [:]
		// Not etcd's JSON error (a proxy's page, or a server that is not etcd's v3 gateway): quoted, with what was
		// expected, instead of run into the status.
		let message =
			object["message"] as? String ?? object["error"] as? String
			?? "\(Self.quoted(reply)), where etcd's v3 JSON gateway was expected (the client URL of etcd 3.4 or later)"
		return failure(
			status: status, message: message, code: (object["code"] as? NSNumber)?.intValue, path: path,
			endpoint: index,
			sentToken: sentToken)
	}

	/// What etcd's `message` and gRPC `code` mean, with the HTTP `status` (0 when the error came inside a stream).
	func failure(
		status: Int, message: String, code: Int?, path: String, endpoint index: Int, sentToken: String?
	) -> (
		error: Defaults.RemoteServiceError, isTokenRefused: Bool
	) {
		// etcd's messages may end in a full stop or a newline; the sentences around this one add their own.
		let message = Self.clause(message)
		let context = "\(endpoints[index].absoluteString)\(path): \(status == 0 ? "" : "HTTP \(status): ")\(message)"
		if credentials != nil,
			status == 401 || code == 16 || message.contains("invalid auth token")
				|| message.contains("revision of auth store is old") || message.contains("user name is empty")
		{
			// Only the token this request sent: another request may have fetched a fresh one meanwhile.
			token.withLock { current in
				if (current ?? "") == (sentToken ?? "") {
					current = nil
				}
			}
			return (.refused(context), true)
		}
		// Unavailable, deadline exceeded, or a server error: the next endpoint may answer.
		if status >= 500 || code == 14 || code == 4 {
			return (.unreachable(context), false)
		}
		// Larger than etcd's --max-request-bytes (1.5 MiB unless set), or than its gRPC message limit (that plus
		// 512 KiB), which gRPC reports as resource exhausted (code 8).
		if message.contains("request is too large") || message.contains("larger than max") {
			return (.valueTooLarge(context), false)
		}
		// Permission denied, unauthenticated, or a user name missing: the set-up, not the request, must change.
		if status == 401 || status == 403 || code == 7 || code == 16 || message.contains("user name is empty")
			|| message.contains("permission denied")
		{
			return (.refused(context), false)
		}
		return (.invalidResponse(context), false)
	}

	/// Every request asks for a member with a leader: one without answers "no leader" at once (the next endpoint is
	/// then tried) instead of holding a read or a write until its own timeout, and refuses or ends a watch.
	private func makeRequest(endpoint index: Int, path: String, body: [String: Any]) async throws -> GatewayRequest {
		GatewayRequest(
			url: endpoints[index].appending(path: path), body: try JSONSerialization.data(withJSONObject: body),
			token: try await currentToken(endpoint: index), timeout: requestTimeout, requiresLeader: true)
	}

	private func currentToken(endpoint index: Int) async throws -> String? {
		guard let credentials else {
			return nil
		}
		if let token = token.withLock({ $0 }) {
			return token.isEmpty ? nil : token
		}
		let request = GatewayRequest(
			url: endpoints[index].appending(path: "/v3/auth/authenticate"),
			body: try JSONSerialization.data(withJSONObject: [
				"name": credentials.user, "password": credentials.password,
			]),
			token: nil, timeout: requestTimeout)
		// Checked and given up as every request is (a member that stopped answering is left within about 2 s, and a
		// cancelled caller, such as a session that restarts, is not held until the timeout: the transport's own wait
		// cannot be cancelled).
		let reply: GatewayReply
		do {
			reply = try await sendCheckingMember(request, endpoint: index, unanswered: nil)
		} catch let error as LeaderChanged {
			// Unreachable, as the member's other failures: `call` then asks the next member, a watch moves on.
			throw Defaults.RemoteServiceError.unreachable(error.reason)
		}
		let object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
		guard reply.status == 200, let fresh = object?["token"] as? String else {
			let failure = failure(
				status: reply.status, reply: reply.body, path: "/v3/auth/authenticate", endpoint: index, sentToken: nil)
			if case .unreachable = failure.error {
				throw failure.error
			}
			if reply.status == 412 || (object?["message"] as? String)?.contains("authentication is not enabled") == true
			{
				// Credentials for an etcd that does not check them: go on without a token, as etcd's own client does.
				// An empty token stands for "none needed"; if etcd turns authentication on, the "user name is empty"
				// refusal clears it and the next request authenticates.
				token.withLock { $0 = "" }
				return nil
			}
			let reason = object?["message"] as? String ?? String(decoding: reply.body.prefix(500), as: UTF8.self)
			throw Defaults.RemoteServiceError.refused("authentication as '\(credentials.user)' failed: \(reason)")
		}
		token.withLock { $0 = fresh }
		authentications.add(1, ordering: .relaxed)
		return fresh
	}

	func failOver(from index: Int) {
		_ = preferred.compareExchange(expected: index, desired: (index + 1) % endpoints.count, ordering: .relaxed)
	}
}
