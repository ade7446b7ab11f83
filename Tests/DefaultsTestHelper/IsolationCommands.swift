import Defaults
import DefaultsTesting
import Foundation

/// Commands for the testing library's check that an isolated scope leaves the home folder alone.
let isolationCommands: [String: @Sendable ([String]) -> Int32] = [
	// isolated-write <key> <text>: writes <text> to a key of the standard store inside `withIsolatedDefaults`, prints
	// what the key reads inside the scope and then outside it, flushes the standard store and exits (with the exit
	// flush).
	"isolated-write": { arguments in
		guard arguments.count == 2 else {
			FileHandle.standardError.write(Data("usage: isolated-write <key> <text>\n".utf8))
			return 64
		}
		let key = Defaults.Key<String>(arguments[0], default: "none")
		let inside = withIsolatedDefaults {
			Defaults[key] = arguments[1]
			return Defaults[key]
		}
		print("inside \(inside)")
		print("outside \(Defaults[key])")
		_ = Defaults.standardStore.flush()
		return 0
	},
	// process-isolate <key> <text>: seeds <text> with `isolateDefaultsForThisProcess`, then prints what the key reads
	// on a thread of its own (outside every task's scope), writes "<text> again" there, prints what the main thread
	// reads, flushes the standard store and exits (with the exit flush).
	"process-isolate": { arguments in
		guard arguments.count == 2 else {
			FileHandle.standardError.write(Data("usage: process-isolate <key> <text>\n".utf8))
			return 64
		}
		let key = Defaults.Key<String>(arguments[0], default: "none")
		isolateDefaultsForThisProcess {
			Defaults[key] = arguments[1]
		}
		let done = DispatchSemaphore(value: 0)
		Thread {
			print("thread \(Defaults[key])")
			Defaults[key] = arguments[1] + " again"
			done.signal()
		}.start()
		guard done.wait(timeout: .now() + 20) == .success else {
			return 1
		}
		print("main \(Defaults[key])")
		_ = Defaults.standardStore.flush()
		return 0
	},
]
