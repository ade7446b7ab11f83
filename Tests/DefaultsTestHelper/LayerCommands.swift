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
	}
]
