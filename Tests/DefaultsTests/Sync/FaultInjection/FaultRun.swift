import Foundation

/// A fault the suite injects while the machines write, and heals.
enum Fault: String, CaseIterable, Sendable {
	case leaderKill
	case lostQuorum
	/// Two members (the leader among them) stopped with SIGSTOP: writes they hold commit only once they go on, after
	/// the machines' requests timed out.
	case pausedQuorum
	case machineKill
	/// A machine killed once all it wrote is in etcd, its settings file left empty (a lost disk, a bad restore), its
	/// sync state kept, and started again: it must rejoin like a new machine, not push its empty file as removals.
	case settingsFileLoss
	case memberPause
	case clusterRestart
	case memberCutOff

	var needsIsolatedNetwork: Bool { self == .memberCutOff }

	/// Injects the fault, holds it `seconds`, heals it; returns the moment it was healed.
	func inject(
		into cluster: EtcdCluster, machines fleet: MachineFleet, for seconds: Double, choosing pick: Int
	)
		async throws -> Date
	{
		let leader = try await Self.waitForLeader(cluster)
		let follower = (leader + 1 + pick % 2) % 3
		// The heal is the moment the fault ends (a process started or resumed, a link up): what follows, etcd's own
		// recovery included, counts towards heal-to-convergence.
		var healed = Date()
		switch self {
		case .leaderKill:
			cluster.kill(leader)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try await cluster.restart(leader)
		case .lostQuorum:
			cluster.kill(leader)
			cluster.kill(follower)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try cluster.launch(leader)
			try cluster.launch(follower)
			try await cluster.waitUntilServing(timeout: 15)
		case .pausedQuorum:
			cluster.pause(leader)
			cluster.pause(follower)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			cluster.resume(leader)
			cluster.resume(follower)
			try await cluster.waitUntilServing(timeout: 15)
		case .machineKill:
			let machine = pick % fleet.schedule.machines
			try fleet.kill(machine)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			try fleet.launch(machine)
		case .settingsFileLoss:
			let machine = pick % fleet.schedule.machines
			try await fleet.waitUntilIdle(machine, timeout: 15)
			try fleet.kill(machine)
			try fleet.emptySettingsFile(of: machine)
			healed = Date()
			try fleet.launch(machine)
		case .memberPause:
			cluster.pause(leader)
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			cluster.resume(leader)
		case .clusterRestart:
			cluster.stop()
			try await Task.sleep(for: .seconds(seconds))
			healed = Date()
			for index in 0..<3 {
				try cluster.launch(index)
			}
			try await cluster.waitUntilServing(timeout: 15)
		case .memberCutOff:
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
		return healed
	}

	private static func waitForLeader(_ cluster: EtcdCluster) async throws -> Int {
		let deadline = Date().addingTimeInterval(10)
		while Date() < deadline {
			if let leader = cluster.leader() {
				return leader
			}
			try await Task.sleep(for: .milliseconds(100))
		}
		throw EtcdCluster.NotReady(description: "the cluster agreed on no leader within 10 s")
	}
}

/// One run: a cluster, machines writing their schedule, faults injected and healed, then the checker's verdict.
struct FaultRun {
	struct Outcome: CustomStringConvertible {
		let faults: [Fault]
		let schedule: MachineFleet.Schedule
		let etcd: URL
		let violations: [String]
		/// Received values pushed back and refused by etcd (see ``FaultChecker/echoAttempts(logs:reports:)``).
		let echoAttempts: [String]
		/// From the last heal until the last machine held etcd's final values; `nil` when they never did.
		let healToConvergence: TimeInterval?
		let revisions: Int64

		var description: String {
			"\(faults.map(\.rawValue)) against \(etcd.path), \(schedule), \(revisions) revisions, heal → convergence "
				+ "\(healToConvergence.map { String(format: "%.2f s", $0) } ?? "never")"
				+ (echoAttempts.isEmpty ? "" : ", \(echoAttempts.count) echo pushes refused by etcd")
				+ (violations.isEmpty ? "" : ":\n" + violations.joined(separator: "\n"))
		}
	}

	let etcd: URL
	let schedule: MachineFleet.Schedule
	let faults: [Fault]
	var startDelay = 0.8
	var faultSeconds = 1.5
	var convergenceTimeout: TimeInterval = 15

	func run() async throws -> Outcome {
		let network = faults.contains { $0.needsIsolatedNetwork } ? try IsolatedNetwork() : nil
		defer { network?.remove() }
		let cluster = try await EtcdCluster.start(etcd: etcd, network: network)
		defer { cluster.stop() }
		let fleet = try MachineFleet(endpoints: cluster.endpoints, schedule: schedule)
		try await Task.sleep(for: .seconds(startDelay))
		var healed = Date()
		for (index, fault) in faults.enumerated() {
			healed = try await fault.inject(
				into: cluster, machines: fleet, for: faultSeconds, choosing: Int(schedule.seed) &+ index)
		}
		let converged = try await fleet.waitUntilConverged(on: cluster.endpoints, timeout: convergenceTimeout)
		try fleet.stop()
		var violations = converged ? [] : ["the machines did not converge within \(convergenceTimeout) s of the heal"]
		guard let state = cluster.endpoints.lazy.compactMap({ EtcdGateway.state($0, prefix: fleet.prefix) }).first
		else {
			return Outcome(
				faults: faults, schedule: schedule, etcd: etcd, violations: violations + ["etcd did not answer a read"],
				echoAttempts: [], healToConvergence: nil, revisions: 0)
		}
		let logs = fleet.logs
		do {
			let history = try EtcdHistory.read(anyOf: cluster.endpoints, prefix: fleet.prefix, upTo: state.revision)
			violations +=
				FaultChecker(
					history: history, finalState: state.values, logs: logs,
					sharedNames: (0..<schedule.sharedKeys).map { "shared\($0)" }
				).violations
		} catch {
			violations.append("etcd's history could not be read: \(error)")
		}
		for (index, exits) in fleet.exits.sorted(by: { $0.key < $1.key }) {
			if let last = exits.last, last.wasSignaled || last.status != 0 {
				violations.append("machine \(index) exited with \(last)")
			}
		}
		if !violations.isEmpty {
			// What the machines reported (each `Defaults.Failure` goes to standard error): the first clue to a cause.
			for (index, exits) in fleet.exits.sorted(by: { $0.key < $1.key }) {
				let reports = exits.map(\.standardError).joined().trimmingCharacters(in: .whitespacesAndNewlines)
				if !reports.isEmpty {
					violations.append("(machine \(index) reported: \(reports.prefix(600)))")
				}
			}
		}
		let reports = (0..<schedule.machines).map { fleet.exits[$0, default: []].map(\.standardError).joined() }
		let echoAttempts = FaultChecker.echoAttempts(logs: logs, reports: reports)
		let convergedAt = logs.compactMap(\.lastView?.milliseconds).max().map { Double($0) / 1000 }
		let healToConvergence = converged ? max(0, (convergedAt ?? 0) - healed.timeIntervalSince1970) : nil
		return Outcome(
			faults: faults, schedule: schedule, etcd: etcd, violations: violations, echoAttempts: echoAttempts,
			healToConvergence: healToConvergence, revisions: state.revision)
	}
}
