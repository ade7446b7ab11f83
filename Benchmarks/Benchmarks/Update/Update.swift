import Benchmark
import BenchmarkSupport
import Defaults
import Foundation

// What an atomic update costs beside a plain write, in one process with no other process on the file: one operation
// per measured iteration (scaling factor `.one`, which `Benchmarks/ratios.py` relies on).
//
// Updates across processes, beside SQLite, are measured by the `UpdateContention` executable (see Docs/Performance.md):
// the harness times one process.

let benchmarks: @Sendable () -> Void = {
	_ = Workspace.shared
	Benchmark.defaultConfiguration = .init(
		metrics: [.wallClock, .mallocCountTotal, .throughput],
		timeUnits: .microseconds,
		warmupIterations: 3,
		scalingFactor: .one,
		maxDuration: .seconds(2),
		maxIterations: 2_000
	)

	let fileStore = Defaults.FileStore.at(Workspace.shared.file("update.plist"))
	let fileCounter = Defaults.Key<Int>("counter", default: 0, suite: fileStore)
	let memoryStore = Defaults.InMemoryStore()
	let memoryCounter = Defaults.Key<Int>("counter", default: 0, suite: memoryStore)

	// The file store: a plain write reaches memory only (the file follows within 100 ms, coalesced); the update locks
	// the file, re-reads it if another process changed it, and writes it durably before it returns; a write followed
	// by `flush()` is the plain write's way to have the value on disk at a known point.
	Benchmark("Increment Int / Defaults (FileStore) Defaults[key] += 1") { benchmark in
		Defaults[fileCounter] += 1
	}
	Benchmark("Increment Int / Defaults (FileStore) Defaults[key] += 1, flush()") { benchmark in
		Defaults[fileCounter] += 1
		blackHole(fileStore.flush())
	}
	Benchmark("Increment Int / Defaults (FileStore) Defaults.update") { benchmark in
		blackHole(try! Defaults.update(fileCounter) { $0 += 1 })
	}

	// In memory: the price of the update's lock and transaction over the plain read and write.
	Benchmark("Increment Int / Defaults (InMemoryStore) Defaults[key] += 1") { benchmark in
		Defaults[memoryCounter] += 1
	}
	Benchmark("Increment Int / Defaults (InMemoryStore) Defaults.update") { benchmark in
		blackHole(try! Defaults.update(memoryCounter) { $0 += 1 })
	}
}
