import Benchmark
import BenchmarkSupport
import Defaults
import Foundation

// Operations that cost microseconds or more (collections, flushes, first reads in a fresh process, notifying 1,000
// observers): each measured iteration is one operation (scaling factor `.one`), and every number printed is per
// operation. `Benchmarks/ratios.py` relies on that factor: keep this target
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

	registerCollections()
	registerFlushes()
	registerFirstReads()
	registerNotifications()
}

// MARK: - Collections

/// `Read …` and `Write …` of collections, which cost microseconds to milliseconds through `UserDefaults`: one
/// operation per measured iteration. The harness's own cost per iteration (about 0.1 µs) is in these numbers, which
/// matters only for the `[String: Any]` floor and the cached reads.
private func registerCollections() {
	let configuration = Benchmark.Configuration(
		warmupIterations: 3, maxDuration: .milliseconds(500), maxIterations: 2_000)
	readWriteGroup(
		"[String] x100", Samples.strings,
		read: { $0.stringArray(forKey: $1) }, write: { $0.set($1, forKey: $2) }, configuration: configuration)
	readWriteGroup(
		"[String: AnySerializable] x20", Samples.mixed,
		// A `UserDefaults` user stores the same values as a `[String: Any]` property list.
		read: { $0.dictionary(forKey: $1) },
		write: { defaults, _, key in defaults.set(Samples.mixedPropertyList, forKey: key) },
		configuration: configuration)
	readWriteGroup(
		"nested collection", Samples.nested,
		// `Set` is no property-list type: a `UserDefaults` user goes through JSON.
		read: { defaults, key in
			defaults.data(forKey: key).flatMap { try? JSONDecoder().decode(Nested.self, from: $0) }
		},
		write: { defaults, value, key in defaults.set(try! JSONEncoder().encode(value), forKey: key) },
		userDefaultsLabel: "UserDefaults + JSONDecoder", userDefaultsWriteLabel: "UserDefaults + JSONEncoder",
		configuration: configuration)

}

// MARK: - Flush

/// `Flush N keys / …`: a file of N keys written to disk after a change (not measured). The file store has every key
/// changed, its worst case; `UserDefaults` one key, as it rewrites the whole file whatever changed.
private func registerFlushes() {
	for count in [1_000, 10_000] {
		let title = "Flush \(count.formatted()) keys"
		let names = (0..<count).map { "key\($0)" }
		let configuration = Benchmark.Configuration(warmupIterations: 1, maxDuration: .seconds(3), maxIterations: 30)

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
			// One key changed: `synchronize()` rewrites the whole file whatever changed, and changing all 10,000 through
			// `set` took longer than this benchmark's whole time budget.
			defaults.set(Int.random(in: 0..<1_000_000), forKey: names[0])
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
	let configuration = Benchmark.Configuration(warmupIterations: 1, maxDuration: .seconds(2), maxIterations: 60)

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

/// `Notify 1,000 observers / …` and `Notify 100 observers / …`: one write heard by that many observers of the key.
private func registerNotifications() {
	Benchmark("Notify 100 observers / Defaults.observe (InMemoryStore)") { benchmark, fixture in
		fixture.lastValue += 1
		Defaults[fixture.key] = fixture.lastValue
	} setup: {
		ObservedKey<Int>(observers: 100)
	}

	Benchmark("Notify 100 observers / NotificationCenter.post") { benchmark, fixture in
		fixture.post()
	} setup: {
		ObservedNotification(observers: 100)
	}

	Benchmark("Notify 100 observers of a struct / Defaults.observe (InMemoryStore)") { benchmark, fixture in
		fixture.lastValue.age += 1
		Defaults[fixture.key] = fixture.lastValue
	} setup: {
		ObservedKey<Profile>(observers: 100)
	}

	Benchmark("Notify 1,000 observers / Defaults.observe (InMemoryStore)") { benchmark, fixture in
		fixture.lastValue += 1
		Defaults[fixture.key] = fixture.lastValue
	} setup: {
		ObservedKey<Int>(observers: 1_000)
	}

	Benchmark("Notify 1,000 observers / NotificationCenter.post") { benchmark, fixture in
		fixture.post()
	} setup: {
		ObservedNotification(observers: 1_000)
	}
}
