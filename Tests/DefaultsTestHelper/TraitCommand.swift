import Defaults
import DefaultsTesting
import Foundation
import Synchronization
import Testing

// `isolated-trait <key> <text>`: runs `TraitChildTests` below through Swift Testing's own runner, the entry point
// `swift test` calls, so that the runner applies the `.isolatedDefaults` trait as it does in an app's tests; then prints
// what the key reads outside the test, flushes the standard store and exits with the runner's status (with the exit
// flush). The test prints what the key reads inside it; the parent lists the home folder before and after.
//
// The runner finds tests in the process's own image, so the test is declared here, in the helper: a second test
// bundle would be the only other place. It runs only when `DEFAULTS_TRAIT_CHILD_KEY` names its key, so that the test
// process, which links this module too, skips it.
let traitCommands: [String: @Sendable ([String]) -> Int32] = [
	"isolated-trait": { arguments in
		guard arguments.count == 2 else {
			FileHandle.standardError.write(Data("usage: isolated-trait <key> <text>\n".utf8))
			return 64
		}
		setenv(TraitChild.keyVariable, arguments[0], 1)
		setenv(TraitChild.textVariable, arguments[1], 1)
		var options = __CommandLineArguments_v0()
		options.filter = ["TraitChildTests"]
		let status = Mutex<CInt?>(nil)
		let done = DispatchSemaphore(value: 0)
		Task {
			let result: CInt = await __swiftPMEntryPoint(passing: options)
			status.withLock { $0 = result }
			done.signal()
		}
		guard done.wait(timeout: .now() + 60) == .success, let result = status.withLock({ $0 }) else {
			FileHandle.standardError.write(Data("the test runner did not finish in 60 seconds\n".utf8))
			return 1
		}
		print("outside \(Defaults[Defaults.Key<String>(arguments[0], default: "none")])")
		_ = Defaults.standardStore.flush()
		return result
	}
]

/// What the command hands the test: the key and the text, in the environment. (Not on the suite itself, whose traits
/// would then name the type they are attached to.)
enum TraitChild {
	static let keyVariable = "DEFAULTS_TRAIT_CHILD_KEY"
	static let textVariable = "DEFAULTS_TRAIT_CHILD_TEXT"
	static var key: String? { ProcessInfo.processInfo.environment[keyVariable] }
}

/// The test the command above runs, under the trait.
@Suite(.enabled(if: TraitChild.key != nil)) struct TraitChildTests {
	@Test(.isolatedDefaults) func writeUnderTheTrait() throws {
		let key = Defaults.Key<String>(try #require(TraitChild.key), default: "none")
		Defaults[key] = ProcessInfo.processInfo.environment[TraitChild.textVariable] ?? ""
		#expect(Defaults.standardStore.flush())
		print("inside \(Defaults[key])")
	}
}
