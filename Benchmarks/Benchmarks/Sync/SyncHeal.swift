import Benchmark
import Defaults
import DefaultsEtcd
import Foundation

// Heal → convergence: a 3-member etcd cluster (its own processes, on free loopback ports) and 5 engines with stores
// of their own in this process. Each iteration injects a fault, writes one value on every machine while it lasts,
// heals it, and measures from the heal (the process restarted or resumed) until every machine holds every value.
// The fault-injection suite checks correctness; this measures only the time (issue 18's target: within 2 s, p50
// under 1 s).

func registerHealBenchmarks() {
	for fault in HealFault.allCases {
		Benchmark(
			"Sync: heal → convergence after \(fault.rawValue)",
			configuration: .init(
				metrics: [.wallClock], timeUnits: .milliseconds, warmupIterations: 0, maxDuration: .seconds(40),
				maxIterations: 8)
		) { benchmark in
			let cluster = HealCluster()
			defer { cluster.stop() }
			let machines = HealMachines(endpoints: cluster.endpoints, prefix: "/bench/heal/\(UUID().uuidString)/")
			defer { machines.stop() }
			try? await Task.sleep(for: .milliseconds(500))
			for iteration in benchmark.scaledIterations {
				let leader = cluster.waitForLeader()
				let value = "\(iteration)-\(UUID().uuidString.prefix(8))"
				fault.inject(into: cluster, leader: leader)
				machines.writeEverywhere(value)
				try? await Task.sleep(for: .seconds(1))
				benchmark.startMeasurement()
				fault.heal(cluster, leader: leader)
				let converged = await machines.waitUntilEveryoneHolds(value, timeout: 30)
				benchmark.stopMeasurement()
				precondition(converged, "the machines did not converge within 30 s after \(fault.rawValue)")
			}
		}
	}
}

enum HealFault: String, CaseIterable {
	case leaderKill = "leader kill"
	case lostQuorum = "lost quorum"
	case leaderPause = "leader SIGSTOP"
	case clusterRestart = "whole-cluster restart"

	func inject(into cluster: HealCluster, leader: Int) {
		switch self {
		case .leaderKill: cluster.signal(leader, SIGKILL)
		case .lostQuorum:
			cluster.signal(leader, SIGKILL)
			cluster.signal((leader + 1) % 3, SIGKILL)
		case .leaderPause: cluster.signal(leader, SIGSTOP)
		case .clusterRestart:
			for index in 0..<3 {
				cluster.signal(index, SIGKILL)
			}
		}
	}

	func heal(_ cluster: HealCluster, leader: Int) {
		switch self {
		case .leaderKill: cluster.launch(leader)
		case .lostQuorum:
			cluster.launch(leader)
			cluster.launch((leader + 1) % 3)
		case .leaderPause: cluster.signal(leader, SIGCONT)
		case .clusterRestart:
			for index in 0..<3 {
				cluster.launch(index)
			}
		}
	}
}

/// Five machines: engines with in-memory stores, each preferring another member.
final class HealMachines: @unchecked Sendable {
	let stores: [Defaults.InMemoryStore]
	let engines: [Defaults.SyncEngine]
	let names = (0..<5).map { "machine\($0)" }

	init(endpoints: [String], prefix: String) {
		let stores = (0..<5).map { _ in Defaults.InMemoryStore() }
		self.stores = stores
		engines = zip(0..<5, stores).map { index, store in
			let preferred = endpoints.indices.map { endpoints[($0 + index) % endpoints.count] }
			let engine = Defaults.SyncEngine(
				remote: try! EtcdClient(endpoints: preferred, requestTimeout: 2), prefix: prefix, store: store)
			engine.add((0..<5).map { "machine\($0)" })
			engine.start()
			return engine
		}
	}

	/// Each machine writes `value` to its own key.
	func writeEverywhere(_ value: String) {
		for (store, name) in zip(stores, names) {
			try! store.write(value, forKey: name)
		}
	}

	func waitUntilEveryoneHolds(_ value: String, timeout: TimeInterval) async -> Bool {
		let deadline = Date().addingTimeInterval(timeout)
		while Date() < deadline {
			let isConverged = stores.allSatisfy { store in
				names.allSatisfy { store.storedValue(forKey: $0) as? String == value }
			}
			if isConverged {
				return true
			}
			try? await Task.sleep(for: .milliseconds(5))
		}
		return false
	}

	func stop() {
		for engine in engines {
			engine.stop()
		}
	}
}
