import Benchmark
import Defaults
import Foundation

/// The ways a value is stored: each store of the package, behind `Defaults[key]`.
public enum StoreKind: CaseIterable, Sendable {
	case file, memory, userDefaults

	public var label: String {
		switch self {
		case .file: "Defaults (FileStore)"
		case .memory: "Defaults (InMemoryStore)"
		case .userDefaults: "Defaults (UserDefaults)"
		}
	}

	public func makeStore() -> any Defaults.Store {
		switch self {
		case .file: Defaults.FileStore.at(Workspace.shared.file("store-\(UUID().uuidString).plist"))
		case .memory: Defaults.InMemoryStore()
		case .userDefaults: Workspace.shared.userDefaults("store").defaults
		}
	}
}

/// Registers `Read <title>` and `Write <title>`: `Defaults[key]` with each store, `UserDefaults` as a user would use
/// it, and the `[String: Any]` floor.
///
/// Inlinable, so that each benchmark target specialises it for its value types, as a user's code would be.
@inlinable
public func readWriteGroup<Value: Defaults.Serializable, Read>(
	_ title: String, _ value: Value,
	read: @escaping (UserDefaults, String) -> Read,
	write: @escaping (UserDefaults, Value, String) -> Void,
	nextValue: ((Int) -> Value)? = nil,
	userDefaultsLabel: String = "UserDefaults",
	userDefaultsWriteLabel: String = "UserDefaults",
	configuration: Benchmark.Configuration = Benchmark.defaultConfiguration
) {
	for kind in StoreKind.allCases {
		Benchmark("Read \(title) / \(kind.label)", configuration: configuration) {
			(benchmark, key: Defaults.Key<Value>) in
			for _ in benchmark.scaledIterations {
				blackHole(Defaults[key])
			}
		} setup: {
			let key = Defaults.Key<Value>("value", default: value, suite: kind.makeStore())
			Defaults[key] = value
			key.suite.flush()
			return key
		}

		Benchmark("Write \(title) / \(kind.label)", configuration: configuration) { benchmark, key in
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

	Benchmark("Read \(title) / \(userDefaultsLabel)", configuration: configuration) { benchmark, defaults in
		for _ in benchmark.scaledIterations {
			blackHole(read(defaults, "value"))
		}
	} setup: {
		let defaults = Workspace.shared.userDefaults("read").defaults
		write(defaults, value, "value")
		return defaults
	}

	Benchmark("Write \(title) / \(userDefaultsWriteLabel)", configuration: configuration) { benchmark, defaults in
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

	Benchmark("Read \(title) / [String: Any]", configuration: configuration) { benchmark, box in
		for _ in benchmark.scaledIterations {
			blackHole(box.values["value"] as? Value)
		}
	} setup: {
		DictionaryBox(["value": value])
	}

	Benchmark("Write \(title) / [String: Any]", configuration: configuration) { benchmark, box in
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
