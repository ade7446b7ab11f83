import Benchmark
import BenchmarkSupport
import Defaults
import Foundation

// Single operations: each measured iteration runs 1,000 of them (scaling factor `.kilo`), so that the harness's own
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
	registerNotifications()
}

// MARK: - Reads and writes

private func registerReadsAndWrites() {
	group(
		"Int", Samples.int,
		read: { $0.integer(forKey: $1) }, write: { $0.set($1, forKey: $2) },
		nextValue: { $0 })
	group(
		"Bool", Samples.bool,
		read: { $0.bool(forKey: $1) }, write: { $0.set($1, forKey: $2) },
		nextValue: { $0 & 1 == 0 })
	group(
		"Double", Samples.double,
		read: { $0.double(forKey: $1) }, write: { $0.set($1, forKey: $2) },
		nextValue: { Double($0) })
	group(
		"String", Samples.string,
		read: { $0.string(forKey: $1) }, write: { $0.set($1, forKey: $2) })
	group(
		"Data 1 KB", Samples.data,
		read: { $0.data(forKey: $1) }, write: { $0.set($1, forKey: $2) })
	group(
		"Date", Samples.date,
		read: { $0.object(forKey: $1) as? Date }, write: { $0.set($1, forKey: $2) })
	group(
		"struct", Samples.profile,
		read: { defaults, key in
			defaults.data(forKey: key).flatMap { try? JSONDecoder().decode(Profile.self, from: $0) }
		},
		write: { defaults, value, key in defaults.set(try! JSONEncoder().encode(value), forKey: key) },
		userDefaultsLabel: "UserDefaults + JSONDecoder", userDefaultsWriteLabel: "UserDefaults + JSONEncoder")
	group(
		"enum", Samples.theme,
		read: { $0.string(forKey: $1).flatMap(Theme.init(rawValue:)) },
		write: { $0.set($1.rawValue, forKey: $2) })
	group(
		"[String] x100", Samples.strings,
		read: { $0.stringArray(forKey: $1) }, write: { $0.set($1, forKey: $2) })
	group(
		"[String: AnySerializable] x20", Samples.mixed,
		// A `UserDefaults` user stores the same values as a `[String: Any]` property list.
		read: { $0.dictionary(forKey: $1) },
		write: { defaults, _, key in defaults.set(Samples.mixedPropertyList, forKey: key) }
	)
	group(
		"nested collection", Samples.nested,
		// `Set` is no property-list type: a `UserDefaults` user goes through JSON.
		read: { defaults, key in
			defaults.data(forKey: key).flatMap { try? JSONDecoder().decode(Nested.self, from: $0) }
		},
		write: { defaults, value, key in defaults.set(try! JSONEncoder().encode(value), forKey: key) },
		userDefaultsLabel: "UserDefaults + JSONDecoder", userDefaultsWriteLabel: "UserDefaults + JSONEncoder")

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

/// The ways a value is stored: each store of the package, behind `Defaults[key]`.
private enum StoreKind: CaseIterable {
	case file, memory, userDefaults

	var label: String {
		switch self {
		case .file: "Defaults (FileStore)"
		case .memory: "Defaults (InMemoryStore)"
		case .userDefaults: "Defaults (UserDefaults)"
		}
	}

	func makeStore() -> any Defaults.Store {
		switch self {
		case .file: Defaults.FileStore.at(Workspace.shared.file("store-\(UUID().uuidString).plist"))
		case .memory: Defaults.InMemoryStore()
		case .userDefaults: Workspace.shared.userDefaults("store").defaults
		}
	}
}

/// Registers `Read <title>` and `Write <title>`: `Defaults[key]` with each store, `UserDefaults` as a user would use
/// it, and the `[String: Any]` floor.
private func group<Value: Defaults.Serializable, Read>(
	_ title: String, _ value: Value,
	read: @escaping (UserDefaults, String) -> Read,
	write: @escaping (UserDefaults, Value, String) -> Void,
	nextValue: ((Int) -> Value)? = nil,
	userDefaultsLabel: String = "UserDefaults",
	userDefaultsWriteLabel: String = "UserDefaults"
) {
	for kind in StoreKind.allCases {
		Benchmark("Read \(title) / \(kind.label)") { (benchmark, key: Defaults.Key<Value>) in
			for _ in benchmark.scaledIterations {
				blackHole(Defaults[key])
			}
		} setup: {
			let key = Defaults.Key<Value>("value", default: value, suite: kind.makeStore())
			Defaults[key] = value
			key.suite.flush()
			return key
		}

		Benchmark("Write \(title) / \(kind.label)") { benchmark, key in
			if let nextValue {
				for index in benchmark.scaledIterations {
					Defaults[key] = nextValue(index)
				}
			} else {
				for _ in benchmark.scaledIterations {
					Defaults[key] = value
				}
			}
		} setup: {
			Defaults.Key<Value>("value", default: value, suite: kind.makeStore())
		}
	}

	Benchmark("Read \(title) / \(userDefaultsLabel)") { benchmark, defaults in
		for _ in benchmark.scaledIterations {
			blackHole(read(defaults, "value"))
		}
	} setup: {
		let defaults = Workspace.shared.userDefaults("read").defaults
		write(defaults, value, "value")
		return defaults
	}

	Benchmark("Write \(title) / \(userDefaultsWriteLabel)") { benchmark, defaults in
		if let nextValue {
			for index in benchmark.scaledIterations {
				write(defaults, nextValue(index), "value")
			}
		} else {
			for _ in benchmark.scaledIterations {
				write(defaults, value, "value")
			}
		}
	} setup: {
		Workspace.shared.userDefaults("write").defaults
	}

	Benchmark("Read \(title) / [String: Any]") { benchmark, box in
		for _ in benchmark.scaledIterations {
			blackHole(box.values["value"] as? Value)
		}
	} setup: {
		DictionaryBox(["value": value])
	}

	Benchmark("Write \(title) / [String: Any]") { benchmark, box in
		if let nextValue {
			for index in benchmark.scaledIterations {
				box.values["value"] = nextValue(index)
			}
		} else {
			for _ in benchmark.scaledIterations {
				box.values["value"] = value
			}
		}
	} setup: {
		DictionaryBox()
	}
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
		ObservedKey(observers: 1)
	}

	Benchmark("Notify 1 observer / NotificationCenter.post") { benchmark, fixture in
		for _ in benchmark.scaledIterations {
			fixture.post()
		}
	} setup: {
		ObservedNotification(observers: 1)
	}
}
