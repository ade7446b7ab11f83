import Foundation
import Testing

extension FaultInjectionTests {
	/// A member cut off from its peers campaigns on its own; healed, it must rejoin at the term the others kept, not
	/// force a new election on them: with etcd 3.4's default (`--pre-vote` off) its higher term made the leader step
	/// down, and every member answered "no leader" for 2-3 s after the heal, which the fault figures then counted
	/// as the engine's (the cut-off scenario's writes after the heal arrived 3.8-4.0 s late on 3.4, 0.6 s on 3.5).
	///
	/// In the fault-injection suite, so that it runs serialized with the other clusters and in the test command's pass
	/// of time-sensitive suites (beside the tests that block threads on child processes, its cluster did not start
	/// in time).
	@Test(
		.enabled(if: IsolatedNetwork.isAvailable, "network namespaces need root and `ip netns`"),
		.scaledTimeLimit(minutes: 1), arguments: FaultInjectionTests.etcds)
	func aCutOffMemberRejoinsWithoutAnElection(etcd: URL) async throws {
		let network = try IsolatedNetwork()
		defer { network.remove() }
		let cluster = try await EtcdCluster.start(etcd: etcd, network: network)
		defer { cluster.stop() }
		let leader = try await Fault.waitForLeader(cluster)
		let follower = (leader + 1) % 3
		let term = try #require(await cluster.term(leader))
		try network.cut(follower)
		// Leaderless: its election timeout passed and it campaigned, which without pre-vote raised its term (raft
		// forgets the leader as it becomes a candidate or pre-candidate).
		try await cluster.waitUntilLeaderless(follower, timeout: 5)
		try network.heal(follower)
		try await cluster.waitUntilServing(timeout: 15)
		#expect(await cluster.leader() == leader, "the leader changed after the heal")
		let termAfter = await cluster.term(leader)
		#expect(termAfter == term, "an election after the heal: term \(term) became \(termAfter ?? -1)")
	}
}
