import Foundation
import Testing

/// The partition the member-cut-off scenario makes is a partition while it lasts, and is gone once healed: before,
/// the heal took the links up but not the routes that taking them down had deleted, so the member stayed cut off,
/// and the scenario failed on its harness ("etcd did not answer a read", heals of 49 s), not on the engine.
@Suite(
	.enabled(if: IsolatedNetwork.isAvailable, "network namespaces need root and `ip netns`"),
	.scaledTimeLimit(minutes: 1))
struct IsolatedNetworkTests {
	/// Whether member `member`'s namespace has a route to member `other`'s peer address.
	static func routes(_ network: IsolatedNetwork, from member: Int, to other: Int) throws -> Bool {
		let result = try ChildProcess.run(
			["-n", network.namespaces[member], "route", "get", network.memberAddresses[other].peer],
			executable: IsolatedNetwork.ip, timeout: 10)
		return result.status == 0 && !result.wasSignaled
	}

	@Test func aHealedMemberReachesItsPeersAgain() throws {
		let network = try IsolatedNetwork()
		defer { network.remove() }
		for other in [0, 1] {
			#expect(try Self.routes(network, from: 2, to: other))
		}
		try network.cut(2)
		for other in [0, 1] {
			#expect(try !Self.routes(network, from: 2, to: other), "member 2 still reaches member \(other)")
		}
		try network.heal(2)
		for other in [0, 1] {
			#expect(
				try Self.routes(network, from: 2, to: other), "member 2 does not reach member \(other) after the heal")
			#expect(try Self.routes(network, from: other, to: 2))
		}
	}
}
