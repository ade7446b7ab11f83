import Benchmark
import BenchmarkSupport
import Defaults
import Foundation

// Operations that touch many keys, the disk or a process: each measured iteration is one operation (scaling factor
// `.one`), and every number printed is per operation. `Benchmarks/ratios.py` relies on that factor: keep this target
// at `.one`.

let benchmarks: @Sendable () -> Void = {
	_ = Workspace.shared
	Benchmark.defaultConfiguration = .init(
		metrics: [.wallClock, .mallocCountTotal, .throughput],
		timeUnits: .microseconds,
		warmupIterations: 2,
		scalingFactor: .one,
		maxDuration: .seconds(2),
		maxIterations: 200
	)

	registerFlushes()
	registerFirstReads()
	registerNotifications()
}

// MARK: - Flush

/// `Flush N keys / …`: every key of a file of N keys changed (not measured), then written to disk.
private func registerFlushes() {
	for count in [1_000, 10_000] {
		let title = "Flush \(count.formatted()) keys"
		let names = (0..<count).map { "key\($0)" }
		let configuration = Benchmark.Configuration(maxDuration: .seconds(3), maxIterations: 30)

		Benchmark("\(title) / Defaults (FileStore) flush()", configuration: configuration) {
			(benchmark, store: Defaults.FileStore) in
			let round = Int.random(in: 0..<1_000_000)
			for (index, name) in names.enumerated() {
				try! store.write(round + index, forKey: name)
			}
			benchmark.startMeasurement()
			blackHole(store.flush())
		} setup: {
			let store = Defaults.FileStore.at(Workspace.shared.file("flush-\(count).plist"))
			for (index, name) in names.enumerated() {
				try! store.write(index, forKey: name)
			}
			store.flush()
			return store
		}

		Benchmark("\(title) / UserDefaults synchronize()", configuration: configuration) {
			(benchmark, defaults: UserDefaults) in
			let round = Int.random(in: 0..<1_000_000)
			for (index, name) in names.enumerated() {
				defaults.set(round + index, forKey: name)
			}
			benchmark.startMeasurement()
			blackHole(defaults.synchronize())
		} setup: {
			let defaults = Workspace.shared.userDefaults("flush").defaults
			for (index, name) in names.enumerated() {
				defaults.set(index, forKey: name)
			}
			defaults.synchronize()
			return defaults
		}
	}
}

// MARK: - First read in a fresh process

/// `First read 10,000-key file / …`: a child process (the `FirstRead` executable) opens a file of 10,000 keys, reads
/// one and exits; the benchmark times the whole child, from spawn to exit. `process only` is the same child reading
/// nothing: the floor of the other three.
private func registerFirstReads() {
	let title = "First read 10,000-key file"
	let names = (0..<10_000).map { "key\($0)" }
	let configuration = Benchmark.Configuration(maxDuration: .seconds(3), maxIterations: 100)

	/// The two files of 10,000 keys, written once per benchmark process.
	func makeFiles() -> (binary: URL, suite: String) {
		let store = Defaults.FileStore.at(Workspace.shared.file("first-read.plist"))
		let (defaults, suite) = Workspace.shared.userDefaults("first-read")
		for (index, name) in names.enumerated() {
			try! store.write(index, forKey: name)
			defaults.set(index, forKey: name)
		}
		store.flush()
		defaults.synchronize()
		return (store.url, suite)
	}

	let cases: [(label: String, arguments: ((binary: URL, suite: String)) -> [String])] = [
		(
			"Defaults (FileStore) binary file",
			{ ["filestore", $0.binary.path(percentEncoded: false), "key5000", "5000"] }
		),
		(
			"Defaults (FileStore) XML file of UserDefaults",
			{
				[
					"filestore", Workspace.shared.userDefaultsFile($0.suite).path(percentEncoded: false), "key5000",
					"5000",
				]
			}
		),
		("UserDefaults", { ["userdefaults", $0.suite, "key5000", "5000"] }),
		("process only", { _ in ["none"] }),
	]

	for (label, arguments) in cases {
		Benchmark("\(title) / \(label)", configuration: configuration) { (benchmark, arguments: [String]) in
			runFirstRead(arguments)
		} setup: {
			let arguments = arguments(makeFiles())
			// Checked once outside the measurement: the child must read the right value.
			runFirstRead(arguments)
			return arguments
		}
	}
}

/// Runs the `FirstRead` executable, built beside this one, and waits for it; stops the benchmark if it fails.
private func runFirstRead(_ arguments: [String]) {
	let process = Process()
	process.executableURL = Bundle.main.executableURL!.deletingLastPathComponent().appending(path: "FirstRead")
	process.arguments = arguments
	try! process.run()
	process.waitUntilExit()
	precondition(process.terminationStatus == 0, "FirstRead \(arguments) exited with \(process.terminationStatus)")
}

// MARK: - Observation

/// `Notify 1,000 observers / …`: one write heard by 1,000 observers of the key.
private func registerNotifications() {
	Benchmark("Notify 1,000 observers / Defaults.observe (InMemoryStore)") { benchmark, fixture in
		fixture.lastValue += 1
		Defaults[fixture.key] = fixture.lastValue
	} setup: {
		ObservedKey(observers: 1_000)
	}

	Benchmark("Notify 1,000 observers / NotificationCenter.post") { benchmark, fixture in
		fixture.post()
	} setup: {
		ObservedNotification(observers: 1_000)
	}
}
