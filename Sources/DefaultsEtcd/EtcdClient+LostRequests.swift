import Defaults
import Foundation

// A request a member will not answer before its timeout: the member stopped (paused, frozen), or it forwarded a write
// to a leader that stopped, and raft does not hand a forwarded proposal to the leader elected after it. Waiting out
// the timeout, then trying the next member (which may be the stopped one), kept a write from the cluster for two
// timeouts while a new leader had long been answering.
extension EtcdClient {
	/// How long a request waits for its answer before its member is checked.
	static let answerCheckDelay: Duration = .seconds(1)
	/// How often the member of a request still unanswered is checked.
	static let answerCheckInterval: Duration = .milliseconds(250)

	/// A request given up because its member's leader changed while it waited: the member has a leader again, and
	/// the request goes to it once more (as unanswered: the old leader may have committed it).
	struct LeaderChanged: Error {
		let reason: String
	}

	/// Sends `request` to member `index`; while no answer has come after ``answerCheckDelay``, checks the member every
	/// ``answerCheckInterval`` with a small serializable read, and gives up on the request, as unanswered, when the
	/// member does not answer that read within ``answerCheckDelay`` (it stopped) or answers it in a raft term above
	/// the one the client knew when it sent the request (its leader changed: a write it forwarded to the old leader
	/// may never be answered: ``LeaderChanged``, and the caller sends it to the member again). A member without a
	/// leader (an election under way) is waited for.
	/// A request given up was sent: it sets `unanswered`, as a timeout does.
	func sendCheckingMember(
		_ request: GatewayRequest, endpoint index: Int, unanswered: Unanswered?
	) async throws -> GatewayReply {
		let sentInTerm = knownTerm.load(ordering: .relaxed)
		let (outcomes, mailbox) = AsyncStream.makeStream(of: Result<GatewayReply, any Error>.self)
		let sending = Task {
			do {
				mailbox.yield(.success(try await self.send(request, endpoint: index, unanswered: unanswered)))
			} catch {
				mailbox.yield(.failure(error))
			}
		}
		// The request's own key, so that a role limited to the keys it may read may make the check's read too.
		let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
		let key =
			body?["key"] as? String ?? ((body?["compare"] as? [[String: Any]])?.first?["key"] as? String) ?? "AA=="
		let checking = Task {
			if let reason = await reasonToGiveUp(on: index, key: key, sentInTerm: sentInTerm) {
				unanswered?.set()
				mailbox.yield(.failure(reason))
			}
		}
		defer {
			sending.cancel()
			checking.cancel()
		}
		for await outcome in outcomes {
			return try outcome.get()
		}
		throw CancellationError()
	}

	/// Why a request to member `index` sent in term `sentInTerm` (0: not known) will not be answered, once the member
	/// shows it; `nil` when cancelled first (the answer came). The check reads `key` (base64), one the request names.
	private func reasonToGiveUp(on index: Int, key: String, sentInTerm: Int64) async -> (any Error)? {
		let endpoint = endpoints[index].absoluteString
		guard (try? await Task.sleep(for: Self.answerCheckDelay)) != nil else {
			return nil
		}
		var baseline = sentInTerm
		while !Task.isCancelled {
			let probe = GatewayRequest(
				url: endpoints[index].appending(path: "/v3/kv/range"),
				body: (try? JSONSerialization.data(withJSONObject: ["key": key, "serializable": true])) ?? Data(),
				token: token.withLock { $0 }.flatMap { $0.isEmpty ? nil : $0 },
				timeout: Double(Self.answerCheckDelay.components.seconds), requiresLeader: true)
			do {
				let reply = try await transports[index].send(probe)
				let object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
				let term = Self.int64((object?["header"] as? [String: Any])?["raft_term"])
				if reply.status == 200, term > 0 {
					noteTerm(term)
					if baseline == 0 {
						baseline = term
					} else if term > baseline {
						return LeaderChanged(
							reason:
								"\(endpoint): its leader changed (raft term \(baseline) to \(term)) while the request waited"
						)
					}
				}
			} catch {
				guard !Task.isCancelled else {
					return nil
				}
				return Defaults.RemoteServiceError.unreachable(
					"\(endpoint): it stopped answering while the request waited: \(error)")
			}
			guard (try? await Task.sleep(for: Self.answerCheckInterval)) != nil else {
				return nil
			}
		}
		return nil
	}

	/// Notes the raft term of an answer's header: the highest seen is the term a later request is sent in.
	func noteTerm(of answer: [String: Any]) {
		noteTerm(Self.int64((answer["header"] as? [String: Any])?["raft_term"]))
	}

	private func noteTerm(_ term: Int64) {
		var current = knownTerm.load(ordering: .relaxed)
		while term > current {
			let (exchanged, original) = knownTerm.compareExchange(
				expected: current, desired: term, ordering: .relaxed)
			if exchanged {
				return
			}
			current = original
		}
	}
}
