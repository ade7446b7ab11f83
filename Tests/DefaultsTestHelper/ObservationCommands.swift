import Defaults
import Foundation
import Synchronization

/// Commands for the observation tests: a second process that changes, or observes, a file store.
///
/// A value argument is `name=value`; a value that reads as an integer is stored as one, anything else as a string.
let observationCommands: [String: @Sendable ([String]) -> Int32] = [
	// observation-write <path> <name=value>…: writes the values into the file store at <path> and flushes.
	"observation-write": { arguments in
		guard arguments.count >= 2 else {
			return ObservationCommand.usage("observation-write <path> <name=value>…")
		}
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		for assignment in arguments.dropFirst() {
			guard let (name, value) = ObservationCommand.parse(assignment) else {
				return ObservationCommand.usage("observation-write <path> <name=value>…")
			}
			try! store.write(value, forKey: name)
		}
		return store.flush() ? 0 : 1
	},
	// observation-await <path> <name> <text> <give-up>: observes the string key <name> with `Defaults.updates`,
	// prints `ready` once the observation runs, and exits 0 as soon as the key reads <text>, or 1 once the file
	// <give-up> exists (the test creates it when its own limit has passed; the child has no clock of its own).
	// Nothing but the observation looks at the store: the change must arrive by itself.
	"observation-await": { arguments in
		guard arguments.count == 4 else {
			return ObservationCommand.usage("observation-await <path> <name> <text> <give-up>")
		}
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		let key = Defaults.Key<String?>(arguments[1], suite: store)
		return ObservationCommand.awaitValue(
			of: key, equalTo: arguments[2], until: ObservationCommand.GiveUp(arguments[3]))
	},
]

enum ObservationCommand {
	static func parse(_ assignment: String) -> (name: String, value: any Sendable)? {
		guard let separator = assignment.firstIndex(of: "=") else {
			return nil
		}
		let name = String(assignment[..<separator])
		let text = String(assignment[assignment.index(after: separator)...])
		if let number = Int(text) {
			return (name, number)
		}
		return (name, text)
	}

	/// Observes `key` with `Defaults.updates`, prints `ready` once the observation runs, and returns 0 as soon as the
	/// key reads `expected`, or 1 once `giveUp` says so, saying on standard error what the store reads then.
	static func awaitValue(of key: Defaults.Key<String?>, equalTo expected: String?, until giveUp: GiveUp) -> Int32 {
		let outcome = Outcome()
		Task {
			var isFirst = true
			for await value in Defaults.updates(key) {
				if isFirst {
					// The initial value comes after the observation is registered: from here on nothing is missed.
					isFirst = false
					FileHandle.standardOutput.write(Data("ready\n".utf8))
				}
				if value == expected {
					outcome.finish(0)
					return
				}
			}
		}
		while !giveUp.hasCome {
			if let status = outcome.wait(seconds: 0.01) {
				return status
			}
		}
		if let status = outcome.wait(seconds: 0) {
			return status
		}
		// Says which side missed the change, for a failure seen only under load: the store not taking in the file
		// (the read below is still the old value) or the observation not delivering what the store took in.
		let onDisk = (key.suite as? Defaults.FileStore).flatMap { try? Data(contentsOf: $0.url) }.flatMap {
			try? PropertyListSerialization.propertyList(from: $0, format: nil)
		}
		let message =
			"observation-await: no update to '\(expected ?? "nil")' when told to give up; the store reads "
			+ "'\(Defaults[key] ?? "nil")'; the file holds \(onDisk.map { "\($0)" } ?? "nothing readable")\n"
		FileHandle.standardError.write(Data(message.utf8))
		return 1
	}

	/// When a waiting command gives up: the argument `<give-up>` of the commands that wait for an event.
	///
	/// A path is a file the test creates when its own limit has passed: the child keeps no clock, so a slow start
	/// on a loaded machine does not eat into the wait, and the test's limit is the only one. A number of seconds is
	/// for a test that runs the child for a while on purpose, listening for a value that never comes.
	struct GiveUp {
		private let file: String?
		private let deadline: Date

		init(_ argument: String) {
			if let seconds = Double(argument) {
				file = nil
				deadline = Date().addingTimeInterval(seconds)
			} else {
				file = argument
				deadline = .distantFuture
			}
		}

		var hasCome: Bool {
			if let file {
				return access(file, F_OK) == 0
			}
			return Date() >= deadline
		}
	}

	static func usage(_ text: String) -> Int32 {
		FileHandle.standardError.write(Data("usage: \(text)\n".utf8))
		return 64
	}

	/// An exit status set once from another thread.
	final class Outcome: Sendable {
		private let semaphore = DispatchSemaphore(value: 0)
		private let status = LockedState<Int32?>(nil)

		func finish(_ value: Int32) {
			status.withLock { $0 = value }
			semaphore.signal()
		}

		func wait(seconds: Double) -> Int32? {
			guard semaphore.wait(timeout: .now() + seconds) == .success else {
				return nil
			}
			return status.withLock { $0 }
		}
	}
}
