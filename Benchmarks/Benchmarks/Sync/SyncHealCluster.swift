import EtcdSupport
import Foundation

/// Three etcd members for the heal benchmarks (`EtcdMembers`: each its own process and data folder, signalled and
/// restarted by process id), electing a leader within a second of a fault.
final class HealCluster: @unchecked Sendable {
	private let members: EtcdMembers

	var endpoints: [String] { members.endpoints }

	init() {
		members = try! EtcdMembers(
			count: 3, name: "m",
			folder: FileManager.default.temporaryDirectory.appending(path: "defaults-bench-heal-\(UUID().uuidString)"),
			arguments: ["--heartbeat-interval", "50", "--election-timeout", "500"])
		_ = waitForLeader()
	}

	func launch(_ index: Int) {
		try! members.launch(index)
	}

	func signal(_ index: Int, _ signal: Int32) {
		members.signal(index, signal)
	}

	/// The member every answering member follows, waiting for one at most 20 s.
	func waitForLeader() -> Int {
		guard let leader = members.waitForLeader(within: 20) else {
			fatalError("the etcd cluster agreed on no leader within 20 s")
		}
		return leader
	}

	func stop() {
		members.stop()
	}
}
