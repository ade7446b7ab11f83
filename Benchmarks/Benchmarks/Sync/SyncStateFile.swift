import Benchmark
import Defaults
import DefaultsEtcd
import Foundation

// Remote changes arriving one by one at a machine that keeps its sync state in files beside a file store's settings
// file (`.sync.json`, `.sync.queue.json`): what writing the state costs per watch message. Another writer pushes 50
// changes of one key, each waiting for etcd's reply; measured until the listener's store holds the last.
func registerStateFileBenchmarks() {
	let etcd = BenchmarkEtcd.shared
	Benchmark(
		"Sync: 50 remote changes applied, state in files",
		configuration: .init(warmupIterations: 1, maxDuration: .seconds(20), maxIterations: 30)
	) { benchmark in
		let folder = FileManager.default.temporaryDirectory.appending(
			path: "defaults-bench-state-\(UUID().uuidString)")
		try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
		defer { try? FileManager.default.removeItem(at: folder) }
		let store = Defaults.FileStore.at(folder.appending(path: "listener.plist"))
		let prefix = "/bench/state-file-\(UUID().uuidString)/"
		let listener = Defaults.SyncEngine(remote: etcd.client, prefix: prefix, store: store)
		listener.add(["value"])
		_ = await listener.synchronize()
		listener.start()
		// Let the watch start.
		try? await Task.sleep(for: .milliseconds(300))
		// Values differ across the warm-up and the measured run, which both count iterations from 0.
		let run = UUID().uuidString
		for iteration in benchmark.scaledIterations {
			let last = "\(run)-\(iteration)-49"
			benchmark.startMeasurement()
			for change in 0..<50 {
				let bytes = try! PropertyListSerialization.data(
					fromPropertyList: ["value": "\(run)-\(iteration)-\(change)"], format: .binary, options: 0)
				try! await etcd.gateway.put(prefix + "value", bytes)
			}
			while store.storedValue(forKey: "value") as? String != last {
				try? await Task.sleep(for: .milliseconds(1))
			}
			benchmark.stopMeasurement()
		}
		listener.stop()
	}
}
