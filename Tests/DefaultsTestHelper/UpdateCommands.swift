import Defaults
import Foundation

/// Commands for the tests of atomic updates across processes. Each waits for its start signal, the file `<start>`
/// (at most 20 s), so that the processes of a test update at the same time rather than one after the other.
let updateCommands: [String: @Sendable ([String]) -> Int32] = [
	// update-increment <path> <key> <count> <start>: increments the integer key `count` times, one update each.
	"update-increment": { arguments in
		guard arguments.count == 4, let count = Int(arguments[2]) else {
			return FileStoreCommand.usage("update-increment <path> <key> <count> <start>")
		}
		FileStoreCommand.reportFailures()
		let key = Defaults.Key<Int>(arguments[1], default: 0, suite: Defaults.FileStore.at(URL(filePath: arguments[0])))
		guard UpdateCommand.waitForStart(arguments[3]) else {
			return 70
		}
		for _ in 0..<count {
			try! Defaults.update(key) { $0 += 1 }
		}
		return 0
	},
	// update-append <path> <key> <prefix> <count> <start>: appends `<prefix>-0` … `<prefix>-<count - 1>` to the
	// string list `key`, one update each.
	"update-append": { arguments in
		guard arguments.count == 5, let count = Int(arguments[3]) else {
			return FileStoreCommand.usage("update-append <path> <key> <prefix> <count> <start>")
		}
		FileStoreCommand.reportFailures()
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		let key = Defaults.Key<[String]>(arguments[1], default: [], suite: store)
		guard UpdateCommand.waitForStart(arguments[4]) else {
			return 70
		}
		for index in 0..<count {
			try! Defaults.update(key) { $0.append("\(arguments[2])-\(index)") }
		}
		return 0
	},
	// update-without-thread-keys <path>: uses up the process's thread-specific keys, then makes one update; prints
	// the error the update throws ("error: …"), or "updated" when it went through.
	"update-without-thread-keys": { arguments in
		guard arguments.count == 1 else {
			return FileStoreCommand.usage("update-without-thread-keys <path>")
		}
		var key = pthread_key_t()
		while pthread_key_create(&key, nil) == 0 {}
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		let counter = Defaults.Key<Int>("counter", default: 0, suite: store)
		do {
			try Defaults.update(counter) { $0 += 1 }
			print("updated")
		} catch {
			print("error: \(error)")
		}
		return 0
	},
]

enum UpdateCommand {
	/// Waits until the file at `path` exists; `false` after 20 s without it.
	static func waitForStart(_ path: String) -> Bool {
		let deadline = Date().addingTimeInterval(20)
		while !FileManager.default.fileExists(atPath: path) {
			guard Date() < deadline else {
				return false
			}
			usleep(1_000)
		}
		return true
	}
}
