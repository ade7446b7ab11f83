// swift-tools-version: 6.1
// The benchmark suite of Defaults: a package of its own, so that the library keeps no dependencies.
//
// Run it from the repository root:
//     swift package --package-path Benchmarks benchmark
// See Docs/Performance.md for what it measures and the latest results.
import PackageDescription

// `DEFAULTS_BEFORE=<folder>` adds `SyncOnOffBefore`: the `SyncOnOff` benchmarks built against a copy of an older
// library that `Benchmarks/library-before` makes in that folder (never committed; see Docs/Performance.md).
let before = Context.environment["DEFAULTS_BEFORE"].flatMap { $0.isEmpty ? nil : $0 }

let package = Package(
	name: "DefaultsBenchmarks",
	platforms: [.macOS(.v15), .iOS(.v18)],
	dependencies: [
		.package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
		.package(name: "Defaults", path: ".."),
	],
	targets: [
		// Sample values, the temporary workspace and observation fixtures shared by the benchmark targets.
		.target(
			name: "BenchmarkSupport",
			dependencies: [
				.product(name: "Benchmark", package: "benchmark"),
				.product(name: "Defaults", package: "Defaults"),
			],
			path: "Sources/BenchmarkSupport"
		),
		// Starts, signals and stops etcd members by process id for the Sync, SyncOnOff and Fleet benchmarks; it does
		// not import Defaults, so that a target built against an older library uses it too.
		.target(name: "EtcdSupport", path: "Sources/EtcdSupport"),
		// Opens a property-list file and reads one key, once per process: timed by the `First read` benchmarks.
		.executableTarget(
			name: "FirstRead",
			dependencies: [.product(name: "Defaults", package: "Defaults")],
			path: "Sources/FirstRead"
		),
		// Single operations, 1,000 per measured iteration (scaling factor `.kilo`).
		.executableTarget(
			name: "Operations",
			dependencies: [
				"BenchmarkSupport",
				.product(name: "Benchmark", package: "benchmark"),
				.product(name: "Defaults", package: "Defaults"),
			],
			path: "Benchmarks/Operations",
			plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
		),
		// Flushes, first reads in a fresh process and notifications of many observers, one per measured iteration.
		.executableTarget(
			name: "Bulk",
			dependencies: [
				"BenchmarkSupport",
				// Built beside `Bulk`, which runs it.
				"FirstRead",
				.product(name: "Benchmark", package: "benchmark"),
				.product(name: "Defaults", package: "Defaults"),
			],
			path: "Benchmarks/Bulk",
			plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
		),
		// Atomic updates beside plain writes, in one process: `Defaults.update` against `Defaults[key] += 1`.
		.executableTarget(
			name: "Update",
			dependencies: [
				"BenchmarkSupport",
				.product(name: "Benchmark", package: "benchmark"),
				.product(name: "Defaults", package: "Defaults"),
			],
			path: "Benchmarks/Update",
			plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
		),
		// Updates per second from several processes on one file (run directly, not by the harness); its SQLite
		// baseline is `sqlite-contention.py`.
		.executableTarget(
			name: "UpdateContention",
			dependencies: [.product(name: "Defaults", package: "Defaults")],
			path: "Sources/UpdateContention"
		),
		// A fleet of sync engines by the hundred on a 3-member etcd cluster (run by `fleet`, not by the harness or CI):
		// arrival of a write at every machine, memory, etcd's cost, a partition, a cold start.
		.executableTarget(
			name: "Fleet",
			dependencies: [
				"EtcdSupport",
				.product(name: "Defaults", package: "Defaults"),
				.product(name: "DefaultsEtcd", package: "Defaults"),
			],
			path: "Sources/Fleet"
		),
		// Resident memory of a file store beside a `[String: Any]` of the same values, and of an empty store, each
		// measured in a fresh process (run directly, not by the harness).
		.executableTarget(
			name: "ResidentMemory",
			dependencies: [.product(name: "Defaults", package: "Defaults")],
			path: "Sources/ResidentMemory"
		),
		// Loops of one operation for valgrind's callgrind to count instructions and calls per operation (run directly,
		// not by the harness): a count does not move with the machine's load, as the harness's times do.
		.executableTarget(
			name: "OperationCost",
			dependencies: [.product(name: "Defaults", package: "Defaults")],
			path: "Sources/OperationCost"
		),
		// Sync through a real etcd it starts itself: latency to other machines, initial sync, cost to a local write.
		.executableTarget(
			name: "Sync",
			dependencies: [
				"EtcdSupport",
				.product(name: "Benchmark", package: "benchmark"),
				.product(name: "Defaults", package: "Defaults"),
				.product(name: "DefaultsEtcd", package: "Defaults"),
			],
			path: "Benchmarks/Sync",
			plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
		),
		// Sync on and off on a file store: a local write, a flushed write (the journal's fsync), a synced write and
		// atomic update until acknowledged, one fdatasync of the disk; against one etcd it starts itself.
		.executableTarget(
			name: "SyncOnOff",
			dependencies: [
				"EtcdSupport",
				.product(name: "Benchmark", package: "benchmark"),
				.product(name: "Defaults", package: "Defaults"),
				.product(name: "DefaultsEtcd", package: "Defaults"),
			],
			path: "Benchmarks/SyncOnOff",
			plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
		),
	],
	swiftLanguageModes: [.v6]
)

if let before {
	package.dependencies.append(.package(name: "DefaultsBefore", path: before))
	// The same source file as `SyncOnOff` (a link to it), importing the older library's renamed modules.
	package.targets.append(
		.executableTarget(
			name: "SyncOnOffBefore",
			dependencies: [
				"EtcdSupport",
				.product(name: "Benchmark", package: "benchmark"),
				.product(name: "DefaultsBefore", package: "DefaultsBefore"),
				.product(name: "DefaultsEtcdBefore", package: "DefaultsBefore"),
			],
			path: "Benchmarks/SyncOnOffBefore",
			swiftSettings: [.define("DEFAULTS_BEFORE")],
			plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
		))
}
