import Benchmark
import Defaults
import DefaultsEtcd
import Foundation

// A synced key's atomic update (issue 22) against a plain synced write, one engine on the shared benchmark etcd, no
// contention. A plain write returns at once and is pushed by the engine's task (what it costs the writer is
// `Sync: local write x1000, sync on`), so here it is timed until etcd acknowledged it (`synchronize()`: the push's
// transaction and one read of the prefix). The update reads the key, commits a compare-and-swap transaction and
// applies the result before it returns: the same two round trips, and it never returns before etcd answered.

func registerAtomicUpdateBenchmarks(etcd: BenchmarkEtcd) {
	let configuration = Benchmark.Configuration(maxDuration: .seconds(3), maxIterations: 300)

	Benchmark("Sync: plain synced write, acknowledged", configuration: configuration) { benchmark in
		let (engine, key, _) = syncedCounter(etcd, "/bench/acknowledged-write/")
		var value = 0
		for _ in benchmark.scaledIterations {
			value += 1
			benchmark.startMeasurement()
			Defaults[key] = value
			let isSynced = await engine.synchronize()
			benchmark.stopMeasurement()
			precondition(isSynced, "etcd did not answer")
		}
	}

	Benchmark("Sync: atomic update (+1), committed", configuration: configuration) { benchmark in
		let (engine, key, prefix) = syncedCounter(etcd, "/bench/atomic-update/")
		_ = await engine.synchronize()
		for _ in benchmark.scaledIterations {
			benchmark.startMeasurement()
			let updated = try! await Defaults.update(key) { $0 += 1 }
			benchmark.stopMeasurement()
			precondition(updated == Defaults[key], "the update was not applied locally")
		}
		// The engine is not started, so only an update made through sync (a compare-and-swap) reaches etcd.
		let isRemote = try! await etcd.gateway.exists(prefix + "counter")
		precondition(isRemote, "the updates did not go through sync")
	}
}

/// An engine syncing the integer key `counter` of an in-memory store under a fresh prefix below `prefix` (not
/// started), and that prefix.
private func syncedCounter(
	_ etcd: BenchmarkEtcd, _ prefix: String
) -> (Defaults.SyncEngine, Defaults.Key<Int>, String) {
	let store = Defaults.InMemoryStore()
	let unique = prefix + UUID().uuidString + "/"
	let engine = Defaults.SyncEngine(remote: etcd.client, prefix: unique, store: store)
	engine.add(["counter"])
	return (engine, Defaults.Key<Int>("counter", default: 0, suite: store), unique)
}
