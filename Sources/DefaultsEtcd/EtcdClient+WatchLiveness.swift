import Defaults
import Foundation

// A watch's member must keep answering: a member that stopped (a paused process, a host that froze) leaves its watch
// open and silent, and the engine would go on reporting itself connected while it hears nothing. A member that stops
// is left for the next one without ending the consumer's stream: one member down is no outage while another answers.
extension EtcdClient {
	/// How often a watched member is asked for a small read while its watch runs.
	static let watchCheckInterval: Duration = .seconds(3)

	/// How long a watch goes on trying the members, none of which holds a watch, before it ends with their errors
	/// (and the engine reports an outage). A member that is killed or paused is left for the next within
	/// milliseconds; only a cluster with no member that answers and has a leader (no quorum, all stopped, none
	/// reachable) ends the watch.
	static let watchFailoverGrace: Duration = .seconds(1)

	/// Runs the watch on one member after the other from `revision` until the consumer stops: a member that cannot
	/// be reached ends its watch, the next one goes on from the revision after the last event delivered, and the
	/// stream ends only when every member failed since the last watch that held ``watchFailoverGrace``, and at least
	/// that long. Errors another member would answer the same (a refusal, a compacted history) end it at once.
	func followWatch(
		prefix: String, from revision: Int64,
		into continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation, running: RunningWatch
	) async throws {
		var next = revision
		// The members' failures since the last watch that held, and when the first of them came.
		var failures: [String] = []
		var failingSince: ContinuousClock.Instant?
		var isResuming = false
		while true {
			try Task.checkCancellation()
			let index = preferred.load(ordering: .relaxed) % endpoints.count
			let started = ContinuousClock.now
			let attempt: (error: any Error, answered: Bool, next: Int64)
			if isResuming, let behind = try await revisionBehind(index, prefix: prefix, reached: next - 1) {
				attempt = (Defaults.RemoteServiceError.unreachable(behind), false, next)
			} else {
				attempt = await watchOnce(index, prefix: prefix, from: next, into: continuation, running: running)
			}
			isResuming = true
			try Task.checkCancellation()
			next = attempt.next
			guard case Defaults.RemoteServiceError.unreachable(let reason) = attempt.error else {
				throw attempt.error
			}
			failOver(from: index)
			if attempt.answered, ContinuousClock.now - started >= Self.watchFailoverGrace {
				// A watch that held: a new run of failures starts.
				failures = []
				failingSince = nil
			}
			failures.append(reason)
			let since = failingSince ?? started
			failingSince = since
			if failures.count >= endpoints.count, ContinuousClock.now - since >= Self.watchFailoverGrace {
				throw Defaults.RemoteServiceError.unreachable(
					failures.suffix(endpoints.count).joined(separator: "; "))
			}
			if failures.count % endpoints.count == 0 {
				// Every member failed once: a short wait before the next round (an election takes about a second).
				try await Task.sleep(for: .milliseconds(200))
			}
		}
	}

	/// Why member `index` may not take over a watch that reached revision `reached`, or `nil` when it may: it cannot
	/// be read, or its revision is below `reached`, which a member catching up shows, and so does a cluster that
	/// lost its data (wiped, restored), which only the engine's full read tells apart. The watch goes on at a member
	/// that holds what it delivered; with none, the stream ends and the engine reads the prefix again, as it did
	/// before a watch went from member to member (a watch from a revision above etcd's waits for it, silently).
	private func revisionBehind(_ index: Int, prefix: String, reached: Int64) async throws -> String? {
		let endpoint = endpoints[index].absoluteString
		do {
			let answer = try await call(
				"/v3/kv/range", ["key": Self.base64(prefix), "serializable": true], endpoint: index,
				renewingToken: true)
			let revision = Self.revision(of: answer)
			return revision >= reached
				? nil
				: "\(endpoint): its revision \(revision) is below \(reached), which the watch reached"
		} catch let error as LeaderChanged {
			return error.reason
		} catch let error as Defaults.RemoteServiceError {
			guard case .unreachable(let reason) = error else {
				throw error
			}
			return reason
		}
	}

	/// Until the task is cancelled (the watch ended, or the consumer stopped), reads one key on the watched member
	/// every ``watchCheckInterval``; a read that does not come back ends the member's watch as unreachable, and the
	/// watch goes on at another member. The read asks for a leader, so a member cut off from its peers (which loses
	/// its leader within an election timeout) fails it too.
	func checkWatchedMember(
		_ index: Int, prefix: String,
		until continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation
	) async throws {
		while true {
			try await Task.sleep(for: Self.watchCheckInterval)
			do {
				// The prefix itself as one key, which no synced name writes (its name would be empty): the smallest
				// read there is, and one a role limited to the prefix may make.
				// Served by the member alone (serializable), so it costs the cluster nothing; the leader header still
				// makes a member without a leader fail it.
				_ = try await call(
					"/v3/kv/range", ["key": Self.base64(prefix), "serializable": true], endpoint: index,
					renewingToken: true)
			} catch is LeaderChanged {
				// The member has a leader again: it answers.
				continue
			} catch let error as Defaults.RemoteServiceError {
				guard case .unreachable(let reason) = error else {
					continue
				}
				try Task.checkCancellation()
				continuation.finish(
					throwing: Defaults.RemoteServiceError.unreachable("the watched member stopped answering: \(reason)")
				)
				return
			}
		}
	}
}
