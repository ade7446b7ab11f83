import Defaults
import DefaultsTestSupport
import Foundation

/// Commands for the `UserDefaults` store's reload tests. Both take a suite name; run them with `XDG_CONFIG_HOME`
/// set to a temporary folder.
let userDefaultsCommands: [String: @Sendable ([String]) -> Int32] = [
	// Writes every stored-form sample and exits normally, with no flush: the package must make the writes durable.
	"userdefaults-write-samples": { arguments in
		guard let suite = arguments.first.flatMap(UserDefaults.init(suiteName:)) else {
			return 64
		}
		for sample in StoredFormSample.all {
			sample.write(to: suite)
		}
		return 0
	},
	// Reads every sample back and prints each mismatch; fails if there is one.
	"userdefaults-read-samples": { arguments in
		guard let suite = arguments.first.flatMap(UserDefaults.init(suiteName:)) else {
			return 64
		}
		let mismatches = StoredFormSample.all.compactMap { $0.mismatch(in: suite) }
		for mismatch in mismatches {
			print(mismatch)
		}
		return mismatches.isEmpty ? 0 : 1
	},
]
