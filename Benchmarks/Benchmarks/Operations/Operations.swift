import Benchmark
import BenchmarkSupport
import Defaults
import Foundation
import Synchronization

// Single operations of scalars and small values: each measured iteration runs 1,000 of them (scaling factor `.kilo`), so that the harness's own
// cost per iteration (clock and malloc counter reads) is spread over 1,000 operations. Every number printed is per
// operation. `Benchmarks/ratios.py` relies on that factor: keep this target at `.kilo`.
//
// Groups are named `<operation> / <how>`, so that sorting puts every measurement beside its baselines:
// - `Defaults (FileStore)`, `Defaults (InMemoryStore)`, `Defaults (UserDefaults)`: `Defaults[key]` with a key of that
//   store;
// - `UserDefaults`: Foundation's `UserDefaults` used the way a user would (typed getters; JSONEncoder and JSONDecoder
//   for Codable values);
// - `[String: Any]`: a dictionary lookup and cast, the floor every store is measured against.

let benchmarks: @Sendable () -> Void = {
	_ = Workspace.shared
	Benchmark.defaultConfiguration = .init(
		metrics: [.wallClock, .mallocCountTotal, .throughput],
		timeUnits: .nanoseconds,
		warmupIterations: 2,
		scalingFactor: .kilo,
		maxDuration: .milliseconds(700),
		maxIterations: 1_000
	)

	registerReadsAndWrites()
	registerResets()
	registerParallelReads()
	registerLayeredReads()
	registerNotifications()
}

// MARK: - Reads and writes

private func registerReadsAndWrites() {
	readWriteGroup(
		"Int", Samples.int,
		read: { $0.integer(forKey: $1) }, write: { $0.set($1, forKey: $2) },
		nextValue: { $0 })
	readWriteGroup(
		"Bool", Samples.bool,
		read: { $0.bool(forKey: $1) }, write: { $0.set($1, forKey: $2) },
		nextValue: { $0 & 1 == 0 })
	readWriteGroup(
		"Double", Samples.double,
		read: { $0.double(forKey: $1) }, write: { $0.set($1, forKey: $2) },
		nextValue: { Double($0) })
	readWriteGroup(
		"String", Samples.string,
		read: { $0.string(forKey: $1) }, write: { $0.set($1, forKey: $2) })
	readWriteGroup(
		"Data 1 KB", Samples.data,
		read: { $0.data(forKey: $1) }, write: { $0.set($1, forKey: $2) })
	readWriteGroup(
		"Date", Samples.date,
		read: { $0.object(forKey: $1) as? Date }, write: { $0.set($1, forKey: $2) })
	readWriteGroup(
		"struct", Samples.profile,
		read: { defaults, key in
			defaults.data(forKey: key).flatMap { try? JSONDecoder().decode(Profile.self, from: $0) }
		},
		write: { defaults, value, key in defaults.set(try! JSONEncoder().encode(value), forKey: key) },
		userDefaultsLabel: "UserDefaults + JSONDecoder", userDefaultsWriteLabel: "UserDefaults + JSONEncoder")
	readWriteGroup(
		"enum", Samples.theme,
		read: { $0.string(forKey: $1).flatMap(Theme.init(rawValue:)) },
		write: { $0.set($1.rawValue, forKey: $2) })
	// What a user's own code pays to store the struct: `JSONEncoder`'s text (a new encoder per write, as the
	// `UserDefaults + JSONEncoder` rows) stored in a dictionary. The file store writes the same text (keys sorted).
	Benchmark("Write struct / JSONEncoder + [String: Any]") { benchmark, box in
		for _ in benchmark.scaledIterations {
			box.values["value"] = String(decoding: try! JSONEncoder().encode(Samples.profile), as: UTF8.self)
		}
	} setup: {
		DictionaryBox()
	}
	// A cached read of a Codable struct of plain fields (issue 32): `Profile` holds two strings, whose copy a reader
	// must retain and release (four calls into the runtime that an `Int` read does not make); this one copies bits.
	for kind in [StoreKind.file, .memory] {
		Benchmark("Read struct of plain fields / \(kind.label)") { (benchmark, key: Defaults.Key<WindowFrame>) in
			for _ in benchmark.scaledIterations {
				blackHole(Defaults[key])
			}
		} setup: {
			let key = Defaults.Key<WindowFrame>("value", default: Samples.frame, suite: kind.makeStore())
			Defaults[key] = Samples.frame
			key.suite.flush()
			return key
		}
	}
	// What every read of a Codable value cost before the read cache: the stored JSON text decoded again.
	Benchmark("Read struct / decode per read (JSONDecoder)") { (benchmark, box: DictionaryBox) in
		for _ in benchmark.scaledIterations {
			let text = box.values["value"] as! String
			blackHole(try? JSONDecoder().decode(Profile.self, from: Data(text.utf8)))
		}
	} setup: {
		let text = String(decoding: try JSONEncoder().encode(Samples.profile), as: UTF8.self)
		return DictionaryBox(["value": text])
	}
}

// MARK: - Parallel reads

/// `Read Int, N threads / Defaults (FileStore)`: each of N threads reads the same key 1,000,000 times per iteration,
/// all at once (the time printed is per 1,000 reads). With reads that take no lock, 2 threads take about as long as 1
/// (twice the throughput) on 2 free cores.
///
/// `Read Int, N threads / one atomic load (no Defaults)`: the same threads, each loading one shared `Atomic<Int>` in
/// the same loop: what the machine gives two threads that only read one cache line, with no library code at all. When
/// this row's 2 threads do not reach 1.8x either, the machine did not give the run two cores (other load, or the
/// host's placement of the two virtual CPUs), whatever the read does.
private func registerParallelReads() {
	for threads in [1, 2] {
		let running = ReadingThreadsHolder()
		Benchmark("Read Int, \(threads) threads / Defaults (FileStore)") { (_, readers: ReadingThreads) in
			readers.runRound()
		} setup: {
			let key = Defaults.Key<Int>("value", default: Samples.int, suite: StoreKind.file.makeStore())
			Defaults[key] = Samples.int
			key.suite.flush()
			// 1,000 rounds of the 1,000 reads per thread, so that starting a round is lost in the reads (a round takes
			// about 1.5 ms): read the time as per 1,000 reads.
			let readers = ReadingThreads(helpers: threads - 1) {
				for _ in 0..<1_000_000 {
					blackHole(Defaults[key])
				}
			}
			running.set(readers)
			return readers
		} teardown: {
			running.stop()
		}
		let runningControl = ReadingThreadsHolder()
		Benchmark("Read Int, \(threads) threads / one atomic load (no Defaults)") { (_, readers: ReadingThreads) in
			readers.runRound()
		} setup: {
			let shared = SharedInt(Samples.int)
			let readers = ReadingThreads(helpers: threads - 1) {
				for _ in 0..<1_000_000 {
					blackHole(shared.value.load(ordering: .acquiring))
				}
			}
			runningControl.set(readers)
			return readers
		} teardown: {
			runningControl.stop()
		}
	}
}

/// One integer every reading thread of the control row loads.
final class SharedInt: Sendable {
	let value: Atomic<Int>

	init(_ value: Int) {
		self.value = Atomic(value)
	}
}

/// Threads that each run one round of reads when the measuring thread runs its own, kept from one measured iteration
/// to the next. `DispatchQueue.concurrentPerform`, used before, runs an iteration on the calling thread when no worker
/// has taken it yet, so a worker that woke late left both rounds to one thread: two threads measured as one, in about
/// half the runs (1.01x to 1.97x the throughput of one thread, whatever the read did).
final class ReadingThreads: @unchecked Sendable {
	// Unchecked: the counters are atomic and `work` is only called.
	private let rounds = Atomic<Int>(0)
	private let finished = Atomic<Int>(0)
	private let isStopped = Atomic<Bool>(false)
	private let helpers: Int
	private let work: @Sendable () -> Void

	init(helpers: Int, work: @escaping @Sendable () -> Void) {
		self.helpers = helpers
		self.work = work
		for _ in 0..<helpers {
			Thread { [self] in serve() }.start()
		}
	}

	/// Starts a round on every helper, runs one here, and returns when all are done.
	func runRound() {
		let expected = finished.load(ordering: .acquiring) + helpers
		rounds.add(1, ordering: .releasing)
		work()
		while finished.load(ordering: .acquiring) < expected {
			sched_yield()
		}
	}

	/// Ends the helpers after their current round.
	func stop() {
		isStopped.store(true, ordering: .releasing)
	}

	private func serve() {
		var served = 0
		while true {
			// Spins (yielding the core) rather than sleeping, so that a round starts on every thread at once.
			var round = rounds.load(ordering: .acquiring)
			while round == served {
				if isStopped.load(ordering: .acquiring) {
					return
				}
				sched_yield()
				round = rounds.load(ordering: .acquiring)
			}
			served = round
			work()
			finished.add(1, ordering: .releasing)
		}
	}
}

/// The reading threads of one benchmark, for its teardown to stop: the harness hands the setup's result to the
/// benchmark only.
final class ReadingThreadsHolder: @unchecked Sendable {
	private let lock = NSLock()
	private var readers: ReadingThreads?

	func set(_ readers: ReadingThreads) {
		lock.withLock { self.readers = readers }
	}

	func stop() {
		lock.withLock { readers }?.stop()
	}
}

// MARK: - Layered reads

/// `… (system file and lock)`: a file store that has a system-wide defaults file and a locks file beside it (neither
/// sets the key read, as for most keys of an app an administrator configures), against one without (issue 30: at most
/// 2x). `Read Int` goes through the key's cache, as every read of an unchanged key does; `Look up Int` asks the store
/// itself, the path a read takes after any change.
private func registerLayeredReads() {
	Benchmark("Read Int / Defaults (FileStore, system file and lock)") { (benchmark, key: Defaults.Key<Int>) in
		for _ in benchmark.scaledIterations {
			blackHole(Defaults[key])
		}
	} setup: {
		let key = Defaults.Key<Int>("value", default: 0, suite: layeredStore())
		Defaults[key] = Samples.int
		return key
	}
	for (label, isLayered) in [("FileStore", false), ("FileStore, system file and lock", true)] {
		Benchmark("Look up Int / \(label)") { (benchmark, store: Defaults.FileStore) in
			for _ in benchmark.scaledIterations {
				blackHole(store.storedValue(forKey: "value"))
			}
		} setup: {
			let store =
				isLayered
				? layeredStore() : Defaults.FileStore.at(Workspace.shared.file("plain-\(UUID().uuidString).plist"))
			try store.write(Samples.int, forKey: "value")
			store.flush()
			return store
		}
	}
}

/// A store in the workspace (its configuration folder) with a system-wide defaults file and a locks file.
private func layeredStore() -> Defaults.FileStore {
	let name = "layered-\(UUID().uuidString)"
	let files: [(String, [String: Any])] = [
		("\(name).plist", ["theme": "dark", "fontSize": 13]), ("\(name).locks.plist", ["updateChannel": "stable"]),
	]
	for (file, values) in files {
		let data = try! PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
		try! data.write(to: Workspace.shared.systemFile(file))
	}
	return Defaults.FileStore.at(Workspace.shared.file("\(name).plist"))
}

// MARK: - Reset

/// `Reset / …`: removing a stored value. Each iteration first stores 1,000 keys (not measured), then removes them.
private func registerResets() {
	let names = (0..<1_000).map { "key\($0)" }

	for kind in StoreKind.allCases {
		Benchmark("Reset / \(kind.label)") { (benchmark, keys: [Defaults.Key<Int>]) in
			for key in keys {
				Defaults[key] = 1
			}
			benchmark.startMeasurement()
			for key in keys {
				Defaults.reset(key)
			}
		} setup: {
			let store = kind.makeStore()
			return names.map { Defaults.Key<Int>($0, default: 0, suite: store) }
		}
	}

	Benchmark("Reset / UserDefaults") { benchmark, defaults in
		for name in names {
			defaults.set(1, forKey: name)
		}
		benchmark.startMeasurement()
		for name in names {
			defaults.removeObject(forKey: name)
		}
	} setup: {
		Workspace.shared.userDefaults("reset").defaults
	}

	Benchmark("Reset / [String: Any]") { benchmark, box in
		for name in names {
			box.values[name] = 1
		}
		benchmark.startMeasurement()
		for name in names {
			box.values.removeValue(forKey: name)
		}
	} setup: {
		DictionaryBox()
	}
}

// MARK: - Observation

/// `Notify 1 observer / …`: one write heard by one observer. The 1,000-observer case is in the `Bulk` target.
private func registerNotifications() {
	Benchmark("Notify 1 observer / Defaults.observe (InMemoryStore)") { benchmark, fixture in
		for index in benchmark.scaledIterations {
			Defaults[fixture.key] = index
		}
	} setup: {
		ObservedKey<Int>(observers: 1)
	}

	Benchmark("Notify 1 observer / NotificationCenter.post") { benchmark, fixture in
		for _ in benchmark.scaledIterations {
			fixture.post()
		}
	} setup: {
		ObservedNotification(observers: 1)
	}
}
