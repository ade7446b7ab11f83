import Foundation

/// A fault the suite injects while the machines write, and heals.
enum Fault: String, CaseIterable, Sendable {
	case leaderKill
	case lostQuorum
	/// Two members (the leader among them) stopped with SIGSTOP: writes they hold commit only once they go on, after
	/// the machines' requests timed out.
	case pausedQuorum
	case machineKill
	/// One of the processes sharing a settings file (any process when none does) killed with SIGKILL while a synced
	/// atomic update of its is on its way to etcd (between its `inc` line and the answer), and started again.
	case sharingProcessKilledMidPush
	/// A machine killed once all it wrote is in etcd, its settings file left empty (a lost disk, a bad restore), its
	/// sync state kept, and started again: it must rejoin like a new machine, not push its empty file as removals.
	case settingsFileLoss
	case memberPause
	case clusterRestart
	case memberCutOff

	var needsIsolatedNetwork: Bool { self == .memberCutOff }

	/// Whether the fault is an outage of the remote, which a machine whose requests meet it reports (once per
	/// process, by the promise); a killed machine, or a lost settings file, is none.
	var isRemoteOutage: Bool {
		switch self {
		case .machineKill, .sharingProcessKilledMidPush, .settingsFileLoss: false
		default: true
		}
	}

	/// What an injection did: when it was healed, and what it cut off until then.
	struct Injection {
		/// The moment the fault ended (a process started or resumed, a link up).
		var healed: Date
		/// The members that could not give a machine a committed write until the heal: killed, paused, stopped, cut
		/// off from their peers, or left without a quorum (all three when two are killed or paused: the third cannot
		/// learn that a write the others committed is committed, nor commit one).
		var members: [Int] = []
		/// The machine processes killed.
		var processes: [Int] = []
	}

	/// Injects the fault, holds it `seconds`, heals it; returns the moment it was healed and what it reached.
	func inject(
		into cluster: EtcdCluster, machines fleet: MachineFleet, for seconds: Double, choosing pick: Int
	)
		async throws -> Injection
	{
		let leader = try await Self.waitForLeader(cluster)
		let follower = (leader + 1 + pick % 2) % 3
		// The heal is the moment the fault ends (a process started or resumed, a link up): what follows, etcd's own
		// recovery included, counts towards heal-to-convergence.
		var healed = Date()
		var members: [Int] = []
		var processes: [Int] = []
		switch self {
		case .leaderKill:
			members = [leader]
			cluster.kill(leader)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try await cluster.restart(leader)
		case .lostQuorum:
			members = [0, 1, 2]
			cluster.kill(leader)
			cluster.kill(follower)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try cluster.launch(leader)
			try cluster.launch(follower)
			try await cluster.waitUntilServing(timeout: 15)
		case .pausedQuorum:
			members = [0, 1, 2]
			cluster.pause(leader)
			cluster.pause(follower)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			cluster.resume(leader)
			cluster.resume(follower)
			try await cluster.waitUntilServing(timeout: 15)
		case .machineKill:
			let machine = pick % fleet.schedule.machines
			processes = [machine]
			try await fleet.kill(machine)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try fleet.launch(machine)
		case .sharingProcessKilledMidPush:
			let sharing = fleet.schedule.sharingProcesses
			let candidates = Array(0..<(sharing > 0 ? sharing : fleet.schedule.machines))
			// Without increments in the schedule (or none in flight within 5 s) the kill lands wherever it is.
			let process =
				try await fleet.waitUntilIncrementInFlight(anyOf: candidates, timeout: 5)
				?? candidates[pick % candidates.count]
			processes = [process]
			try await fleet.kill(process)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try fleet.launch(process)
		case .settingsFileLoss:
			let machine = pick % fleet.schedule.machines
			try await fleet.waitUntilIdle(machine, timeout: 15)
			processes = [machine]
			try await fleet.kill(machine)
			try fleet.emptySettingsFile(of: machine)
			healed = Date()
			try fleet.launch(machine)
		case .memberPause:
			members = [leader]
			cluster.pause(leader)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			cluster.resume(leader)
		case .clusterRestart:
			members = [0, 1, 2]
			cluster.stop()
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			for index in 0..<3 {
				try cluster.launch(index)
			}
			try await cluster.waitUntilServing(timeout: 15)
		case .memberCutOff:
			members = [follower]
			// A follower: machines that watch it keep a connection to a member that has lost its leader.
			guard let network = cluster.network else {
				throw EtcdCluster.NotReady(description: "a cut-off member needs the cluster in network namespaces")
			}
			try network.cut(follower)
			try await cluster.waitUntilLeaderless(follower, timeout: 5)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try network.heal(follower)
		}
		return Injection(healed: healed, members: members, processes: processes)
	}

	static func waitForLeader(_ cluster: EtcdCluster) async throws -> Int {
		let deadline = Date().addingTimeInterval(20)
		while Date() < deadline {
			if let leader = await cluster.leader() {
				return leader
			}
			try await Task.sleep(for: .milliseconds(100))
		}
		throw EtcdCluster.NotReady(description: "the cluster agreed on no leader within 20 s")
	}
}
