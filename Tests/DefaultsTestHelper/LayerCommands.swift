import Defaults
import Foundation

/// Commands for the layers' child-process tests, which need an environment of their own (`XDG_CONFIG_HOME`,
/// `XDG_CONFIG_DIRS`, variables a store reads): set in the test process, it would reach every test running beside it.
let layerCommands: [String: @Sendable ([String]) -> Int32] = [
	// layers-first-opener <key> [-argument <value>]: opens the suite `suite` and the standard file with `FileStore.at(_:)` before
	// `suite(named:)` and `standard`, and prints whether each opener gave the same store and what <key> reads in each
	// (`suite <value>`, `standard <value>`), and what the launch argument `-argument` reads in the standard file.
	"layers-first-opener": { arguments in
		guard !arguments.isEmpty else {
			return FileStoreCommand.usage("layers-first-opener <key> [-argument <value>]")
		}
		let directory = Defaults.FileStore.directory
		let early = Defaults.FileStore.at(directory.appending(path: "suite.plist"))
		let earlyStandard = Defaults.FileStore.at(
			directory.appending(path: ProcessInfo.processInfo.processName + ".plist"))
		let suite = try! Defaults.FileStore.suite(named: "suite")
		let standard = Defaults.FileStore.standard
		print("same \(early === suite && earlyStandard === standard)")
		print("suite \(FileStoreCommand.describe(suite.storedValue(forKey: arguments[0])))")
		print("standard \(FileStoreCommand.describe(standard.storedValue(forKey: arguments[0])))")
		print("argument \(FileStoreCommand.describe(standard.storedValue(forKey: "argument")))")
		return 0
	},
	// layers-environment <prefix|none> [-key value…]: reads the environment with <prefix> into the standard store
	// (`none`: does not ask), prints each of a fixed set of keys as `<key> <value> <layer>`, resets `stored` and
	// prints it again, writes `written`, flushes, and prints each failure as `failure <key>`.
	"layers-environment": { arguments in
		guard let prefix = arguments.first else {
			return FileStoreCommand.usage("layers-environment <prefix|none> [-key value…]")
		}
		Defaults.failureHandler = { failure in print("failure \(failure.keyName)") }
		let store = Defaults.FileStore.standard
		if prefix != "none" {
			store.readEnvironment(prefix: prefix)
		}
		func show<Value: Defaults.Serializable>(_ name: String, _ defaultValue: Value) {
			let key = Defaults.Key<Value>(name, default: defaultValue, suite: store)
			print("\(name) \(Defaults[key]) \(Defaults.layer(of: key))")
		}
		show("count", 0)
		show("ratio", 0.0)
		show("flag", false)
		show("name", "")
		show("home", URL(filePath: "/"))
		show("point", EnvironmentPoint(x: 0, y: 0))
		show("bad", 0)
		show("bad", 0)
		show("shadowed", 0)
		show("locked", 0)
		show("stored", "")
		show("HOME", "")
		Defaults.reset(Defaults.Key<String>("stored", default: "", suite: store))
		show("stored", "")
		Defaults[Defaults.Key<Int>("written", default: 0, suite: store)] = 1
		return store.flush() ? 0 : 1
	},
]

/// A `Codable` value read from JSON text in an environment variable.
struct EnvironmentPoint: Codable, Defaults.Serializable, CustomStringConvertible {
	var x: Int
	var y: Int

	var description: String { "(\(x), \(y))" }
}
