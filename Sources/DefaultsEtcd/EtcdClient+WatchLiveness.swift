import Defaults
import Foundation

// A watch's member must keep answering: a member that stopped (a paused process, a host that froze) leaves its watch
// open and silent, and the engine would go on reporting itself connected while it hears nothing.
extension EtcdClient {
	/// How often a watched member is asked for a small read while its watch runs.
	static let watchCheckInterval: Duration = .seconds(3)

	/// Until the task is cancelled (the consumer stopped or the stream ended), reads one key on the watched member
	/// every ``watchCheckInterval``; a read that does not come back ends the watch as unreachable, and the next watch
	/// goes to another member. The read asks for a leader, so a member cut off from its peers (which loses its
	/// leader within an election timeout) fails it too.
	func checkWatchedMember(
		_ index: Int, prefix: String,
		until continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation,
		stopping running: RunningWatch
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
			} catch let error as Defaults.RemoteServiceError {
				guard case .unreachable(let reason) = error else {
					continue
				}
				try Task.checkCancellation()
				failOver(from: index)
				continuation.finish(
					throwing: Defaults.RemoteServiceError.unreachable("the watched member stopped answering: \(reason)")
				)
				running.end()
				return
			}
		}
	}
}
