import Defaults
import DefaultsEtcd
import Foundation

/// When each revision under a prefix was committed, as closely as the test process can see it: a watch of the prefix
/// on each member (the package's own ``EtcdClient``, one endpoint each, so that it sends `Grpc-Metadata-Hasleader`
/// and a member without a leader refuses or ends it), kept going across the member's restarts and pauses from the
/// revision after the last it delivered; a revision's moment is the earliest any member delivered it.
///
/// A member delivers only what it applied, which etcd applies once committed: a delivery is never early. It is late by
/// the member's apply, the gateway, loopback and this process's scheduling: milliseconds, which
/// ``FaultRun/observerLag(history:commits:logs:)`` bounds from the machines' own increments.
///
/// ```swift
/// let observer = CommitObserver(endpoints: cluster.endpoints, prefix: fleet.prefix)
/// defer { observer.stop() }
/// let committed = observer.commits  // revision → epoch milliseconds
/// ```
final class CommitObserver: Sendable {
	private let seen = LockedState<[Int64: Int64]>([:])
	private let watches = LockedState<[Task<Void, Never>]>([])

	init(endpoints: [String], prefix: String) {
		let watches = endpoints.map { endpoint in
			Task { [seen] in
				guard let client = try? EtcdClient(endpoints: [endpoint], requestTimeout: 2) else {
					return
				}
				var next: Int64 = 1
				while !Task.isCancelled {
					do {
						for try await batch in client.watch(prefix: prefix, fromRevision: next) {
							let now = Int64(Date().timeIntervalSince1970 * 1000)
							let revisions = batch.map { event in
								switch event {
								case .put(let entry): entry.modRevision
								case .delete(_, let modRevision): modRevision
								}
							}
							seen.withLock { seen in
								for revision in revisions {
									seen[revision] = min(seen[revision] ?? now, now)
								}
							}
							next = max(next, (revisions.max() ?? 0) + 1)
						}
					} catch {
						// The member is down, paused or without a leader: try it again shortly.
					}
					try? await Task.sleep(for: .milliseconds(50))
				}
			}
		}
		self.watches.withLock { $0 = watches }
	}

	/// The moment (epoch milliseconds) each revision seen so far was first delivered by a member.
	var commits: [Int64: Int64] {
		seen.withLock { $0 }
	}

	/// Ends the watches.
	func stop() {
		for watch in watches.withLock({ $0 }) {
			watch.cancel()
		}
	}

	deinit {
		stop()
	}
}
