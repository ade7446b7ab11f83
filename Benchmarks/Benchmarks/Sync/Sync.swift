import Benchmark
import Defaults
import DefaultsEtcd
import EtcdSupport
import Foundation
import Synchronization

// Sync through a real etcd, started by this benchmark on free loopback ports (`etcd` must be on the PATH; Debian:
// `apt-get install etcd-server`). "Machines" are sync engines with stores of their own inside this one process, to
// spare the two cores: what is measured is etcd, the HTTP gateway, the watch stream and the engine, not process
// start-up. One operation per measured iteration (scaling factor `.one`).

let benchmarks: @Sendable () -> Void = {
	Benchmark.defaultConfiguration = .init(
		metrics: [.wallClock],
		timeUnits: .microseconds,
		warmupIterations: 3,
		scalingFactor: .one,
		maxDuration: .seconds(5),
		maxIterations: 300
	)
	let etcd = BenchmarkEtcd.shared

	for machines in [2, 20] {
		// Write on one machine until every other machine's observer has heard it. The machines are started once, in
		// `setup` (each watch needs a moment to start), and serve every sample.
		let running = RunningCluster()
		Benchmark(
			"Sync: write to observers on \(machines - 1) other machine(s)",
			closure: { benchmark in
				guard let cluster = running.cluster.withLock({ $0 }) else {
					fatalError("the cluster was not started")
				}
				// The closure runs again for the measured run after the warm-up: values must differ across runs too,
				// as writing a key's current value pushes nothing.
				let run = UUID().uuidString
				for iteration in benchmark.scaledIterations {
					let value = "\(run)-\(iteration)"
					benchmark.startMeasurement()
					await cluster.writeAndAwaitEveryone(value)
					benchmark.stopMeasurement()
				}
			},
			setup: {
				let cluster = await Cluster(etcd: etcd, machines: machines, prefix: "/bench/latency\(machines)/")
				running.cluster.withLock { $0 = cluster }
			},
			teardown: {
				running.cluster.withLock { $0 }?.stop()
				running.cluster.withLock { $0 = nil }
			}
		)
	}

	for count in [1_000, 10_000] {
		// A new machine joins: reads every key of the prefix and applies it to its store.
		Benchmark(
			"Sync: initial sync of \(count) keys",
			configuration: .init(warmupIterations: 1, maxDuration: .seconds(10), maxIterations: 10)
		) { benchmark in
			let prefix = "/bench/initial\(count)/"
			let names = (0..<count).map { "key\($0)" }
			let seederStore = Defaults.InMemoryStore()
			let seeder = Defaults.SyncEngine(remote: etcd.client, prefix: prefix, store: seederStore)
			seeder.add(names)
			for name in names {
				try! seederStore.write("value of \(name)", forKey: name)
			}
			_ = await seeder.synchronize()
			for _ in benchmark.scaledIterations {
				let store = Defaults.InMemoryStore()
				let newcomer = Defaults.SyncEngine(remote: etcd.client, prefix: prefix, store: store)
				newcomer.add(names)
				benchmark.startMeasurement()
				_ = await newcomer.synchronize()
				benchmark.stopMeasurement()
				precondition(store.storedKeys().count == count)
			}
		}
	}

	// What sync adds to a local write: the same 1,000 writes with and without the key synced (the engine running,
	// etcd reachable; pushes happen on the engine's task, not in the write).
	for isSynced in [false, true] {
		Benchmark(
			"Sync: local write x1000, sync \(isSynced ? "on" : "off")",
			configuration: .init(maxDuration: .seconds(3), maxIterations: 200)
		) { benchmark in
			let store = Defaults.InMemoryStore()
			let key = Defaults.Key<Int>("counter", default: 0, suite: store)
			let engine = Defaults.SyncEngine(remote: etcd.client, prefix: "/bench/local-write/", store: store)
			if isSynced {
				engine.add(["counter"])
				engine.start()
			}
			var value = 0
			for _ in benchmark.scaledIterations {
				benchmark.startMeasurement()
				for _ in 0..<1_000 {
					value += 1
					store[key] = value
				}
				benchmark.stopMeasurement()
			}
			engine.stop()
		}
	}

	// A synced key's atomic update against a plain synced write (SyncAtomicUpdate.swift).
	registerAtomicUpdateBenchmarks(etcd: etcd)

	// Heal → convergence after each fault, on a 3-member cluster of its own (SyncHeal.swift).
	registerHealBenchmarks()
	// Remote changes applied on a machine whose sync state is in files (SyncStateFile.swift).
	registerStateFileBenchmarks()
}

/// The cluster a latency benchmark's samples share, from its `setup` to its `teardown`.
final class RunningCluster: Sendable {
	let cluster = Mutex<Cluster?>(nil)
}

/// Machines in one process, each a store and a running engine, with an observer of `value` on each.
// Observations are made in `init` and ended in `stop`, from the benchmark's one task.
final class Cluster: @unchecked Sendable {
	let engines: [Defaults.SyncEngine]
	let keys: [Defaults.Key<String>]
	let heard = Mutex<(expected: String, count: Int, waiter: CheckedContinuation<Void, Never>?)>(("", 0, nil))
	private var observations: [Defaults.Observation] = []

	init(etcd: BenchmarkEtcd, machines: Int, prefix: String) async {
		var engines: [Defaults.SyncEngine] = []
		var keys: [Defaults.Key<String>] = []
		for _ in 0..<machines {
			let store = Defaults.InMemoryStore()
			let engine = Defaults.SyncEngine(remote: etcd.client, prefix: prefix, store: store)
			engine.add(["value"])
			engine.start()
			engines.append(engine)
			keys.append(Defaults.Key<String>("value", default: "", suite: store))
		}
		self.engines = engines
		self.keys = keys
		for key in keys.dropFirst() {
			let observation = Defaults.observe(key, options: []) { [weak self] change in
				self?.didHear(change.newValue)
			}
			observations.append(observation)
		}
		// Let every watch start.
		try? await Task.sleep(for: .milliseconds(500))
	}

	private func didHear(_ value: String) {
		let waiter = heard.withLock { heard -> CheckedContinuation<Void, Never>? in
			guard value == heard.expected else {
				return nil
			}
			heard.count += 1
			guard heard.count == keys.count - 1 else {
				return nil
			}
			defer { heard.waiter = nil }
			return heard.waiter
		}
		waiter?.resume()
	}

	func writeAndAwaitEveryone(_ value: String) async {
		await withCheckedContinuation { continuation in
			heard.withLock { $0 = (value, 0, continuation) }
			Defaults[keys[0]] = value
		}
	}

	func stop() {
		for observation in observations {
			observation.invalidate()
		}
		for engine in engines {
			engine.stop()
		}
	}
}

/// One etcd for the whole run (`EtcdMembers`, one member on free loopback ports with a temporary data folder), killed
/// by its process id when the benchmark process exits.
final class BenchmarkEtcd: Sendable {
	static let shared = BenchmarkEtcd()

	let client: EtcdClient
	/// The same etcd, for the benchmarks' own calls.
	let gateway: EtcdGateway
	let members: EtcdMembers

	private init() {
		// A member that does not lead within 30 s (SyncOnOff saw more than 15 s under load) is stopped and another
		// started on other ports (a port taken by another process stops etcd at once), at most three times; each
		// failure says what etcd wrote.
		var started: EtcdMembers?
		for attempt in 1...3 where started == nil {
			let members = try! EtcdMembers(
				count: 1, name: "bench",
				folder: FileManager.default.temporaryDirectory.appending(
					path: "defaults-bench-etcd-\(UUID().uuidString)"),
				ports: 30_000..<40_000)
			if members.waitForLeader(within: 30) != nil {
				started = members
			} else {
				let message =
					"etcd on \(members.endpoints[0]) had no leader within 30 s (attempt \(attempt) of 3); it wrote: "
					+ "\(members.logTail(0))\n"
				FileHandle.standardError.write(Data(message.utf8))
				members.stop()
			}
		}
		guard let started else {
			fatalError("etcd did not start three times (see above); is it installed (apt-get install etcd-server)?")
		}
		members = started
		client = try! EtcdClient(endpoints: members.endpoints)
		gateway = EtcdGateway(endpoint: members.endpoints[0])
	}
}
