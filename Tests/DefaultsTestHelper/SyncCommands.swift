import Defaults
import DefaultsEtcd
import Foundation
import Synchronization

/// Commands for the sync tests: each process is one machine, whose settings live in the standard store of its own
/// `XDG_CONFIG_HOME`, synced through etcd at `<endpoint>` under `<prefix>`.
///
/// Names may be written `name*count`, standing for `name0` … `name<count-1>`. Values are strings; `-` means removed.
let syncCommands: [String: @Sendable ([String]) -> Int32] = [
	// sync-write <endpoint> <prefix> <name=value>…: writes the values, synchronises once, flushes and exits. Prints
	// `synced`, `offline` (the changes then wait in the queue for the next run), or `connected, not all synced` (etcd
	// answered, and a change did not go out: a value too large for it, or a settings file that cannot be written).
	"sync-write": { arguments in
		guard arguments.count >= 3 else {
			return ObservationCommand.usage("sync-write <endpoint> <prefix> <name=value>…")
		}
		let assignments = arguments.dropFirst(2).flatMap(SyncCommand.expand)
		let keys = SyncCommand.start(arguments[0], arguments[1], names: assignments.map(\.name))
		for (name, value) in assignments {
			Defaults[keys[name]!] = value
		}
		print(SyncCommand.synchronizeOnce())
		return Defaults.standardStore.flush() ? 0 : 1
	},
	// sync-await <endpoint> <prefix> <name> <value> <give-up>: observes the key with `Defaults.updates`, prints
	// `ready` once observing, and exits 0 as soon as it reads <value>, or 1 once <give-up> (a file the test creates,
	// or a number of seconds) has come.
	"sync-await": { arguments in
		guard arguments.count == 5 else {
			return ObservationCommand.usage("sync-await <endpoint> <prefix> <name> <value> <give-up>")
		}
		let keys = SyncCommand.start(arguments[0], arguments[1], names: [arguments[2]])
		let key = keys[arguments[2]]!
		let expected = arguments[3] == "-" ? nil : arguments[3]
		let status = ObservationCommand.awaitValue(
			of: key, equalTo: expected, until: ObservationCommand.GiveUp(arguments[4]))
		_ = Defaults.standardStore.flush()
		return status
	},
	// sync-await-then-synchronize <endpoint> <prefix> <name> <value> <give-up>: as sync-await, but it synchronises
	// once before it observes (so `ready` comes after the engine's first read has ended: a change made after `ready`
	// is not taken in by that read, which would put a synced value back before the store ever read the change); then,
	// once it read <value>, prints `heard`, synchronises once (a push pass after any under way, a full read, another
	// pass) and prints how that went, as sync-write does: every pass the change woke has ended by then.
	"sync-await-then-synchronize": { arguments in
		guard arguments.count == 5 else {
			return ObservationCommand.usage("sync-await-then-synchronize <endpoint> <prefix> <name> <value> <give-up>")
		}
		let keys = SyncCommand.start(arguments[0], arguments[1], names: [arguments[2]])
		guard SyncCommand.synchronizeOnce() == "synced" else {
			FileHandle.standardError.write(Data("the first synchronisation did not end synced\n".utf8))
			return 1
		}
		let expected = arguments[3] == "-" ? nil : arguments[3]
		let status = ObservationCommand.awaitValue(
			of: keys[arguments[2]]!, equalTo: expected, until: ObservationCommand.GiveUp(arguments[4]))
		guard status == 0 else {
			return status
		}
		FileHandle.standardOutput.write(Data("heard\n".utf8))
		print(SyncCommand.synchronizeOnce())
		return Defaults.standardStore.flush() ? 0 : 1
	},
	// sync-await-and-die <endpoint> <prefix> <name> <value> <give-up>: as sync-await, but ends the process at once
	// when it reads <value> (`_exit`: no flush, no exit handler), as a machine killed right after it heard a remote
	// value.
	"sync-await-and-die": { arguments in
		guard arguments.count == 5 else {
			return ObservationCommand.usage("sync-await-and-die <endpoint> <prefix> <name> <value> <give-up>")
		}
		let keys = SyncCommand.start(arguments[0], arguments[1], names: [arguments[2]])
		let expected = arguments[3] == "-" ? nil : arguments[3]
		let status = ObservationCommand.awaitValue(
			of: keys[arguments[2]]!, equalTo: expected, until: ObservationCommand.GiveUp(arguments[4]))
		// No wait for anything more: the value is heard only once the step that received it has written it into the
		// settings file and the sync state as agreed, under the file's lock (`SyncWorker.locked`,
		// `FileStore.withFileLocked`: the store takes it in after the file is written). This is the earliest a kill
		// can come, with the engine's later passes and the write-behind flush (100 ms) cut off.
		_exit(status)
	},
	// sync-write-and-exit <endpoint> <prefix> <name=value>…: writes the values and exits normally at once, awaiting
	// nothing: the exit's bounded wait pushes them.
	"sync-write-and-exit": { arguments in
		guard arguments.count >= 3 else {
			return ObservationCommand.usage("sync-write-and-exit <endpoint> <prefix> <name=value>…")
		}
		let assignments = arguments.dropFirst(2).flatMap(SyncCommand.expand)
		let keys = SyncCommand.start(arguments[0], arguments[1], names: assignments.map(\.name))
		for (name, value) in assignments {
			Defaults[keys[name]!] = value
		}
		print("written")
		return 0
	},
	// sync-keep-writing <endpoint> <prefix> <name> <count> <interval-ms> <seconds> [<go file>]: writes <name>0… one
	// every <interval-ms>, then synchronises until nothing is pending (at most <seconds>). Exits 0 when all were
	// pushed. With <go file>, it prints `halfway` after the first half of the writes and waits for the file to exist
	// (at most <seconds>) before the rest, and prints `written` after the last write.
	"sync-keep-writing": { arguments in
		guard arguments.count == 6 || arguments.count == 7, let count = Int(arguments[3]),
			let interval = Int(arguments[4]), let seconds = Double(arguments[5])
		else {
			return ObservationCommand.usage(
				"sync-keep-writing <endpoint> <prefix> <name> <count> <interval-ms> <s> [<go file>]")
		}
		let names = (0..<count).map { "\(arguments[2])\($0)" }
		let keys = SyncCommand.start(arguments[0], arguments[1], names: names)
		let go = arguments.count == 7 ? arguments[6] : nil
		for (index, name) in names.enumerated() {
			if let go, index == count / 2 {
				FileHandle.standardOutput.write(Data("halfway\n".utf8))
				let deadline = Date().addingTimeInterval(seconds)
				while access(go, F_OK) != 0 {
					guard Date() < deadline else {
						return 1
					}
					usleep(10_000)
				}
			}
			Defaults[keys[name]!] = "written"
			usleep(UInt32(interval) * 1000)
		}
		if go != nil {
			FileHandle.standardOutput.write(Data("written\n".utf8))
		}
		let deadline = Date().addingTimeInterval(seconds)
		while Date() < deadline {
			let isSynced = SyncCommand.blocking { await Defaults.iCloud.synchronize() }
			if isSynced && Defaults.iCloud.status.pendingCount == 0 {
				_ = Defaults.standardStore.flush()
				print("synced")
				return 0
			}
			usleep(100_000)
		}
		_ = Defaults.standardStore.flush()
		print("still pending: \(Defaults.iCloud.status)")
		return 1
	},
	// sync-dump <endpoint> <prefix> <name>…: synchronises once and prints `name=value` for each name that has a
	// value (what sync-write prints first).
	"sync-dump": { arguments in
		guard arguments.count >= 3 else {
			return ObservationCommand.usage("sync-dump <endpoint> <prefix> <name>…")
		}
		let names = arguments.dropFirst(2).flatMap { SyncCommand.expand($0).map(\.name) }
		let keys = SyncCommand.start(arguments[0], arguments[1], names: names)
		print(SyncCommand.synchronizeOnce())
		for name in names {
			if let value = Defaults[keys[name]!] {
				print("\(name)=\(value)")
			}
		}
		return Defaults.standardStore.flush() ? 0 : 1
	},
	// sync-lose-conflict <endpoint> <prefix> <name> <value> <go file> <seconds>: syncs only when asked, agrees on the
	// key's remote value, writes <value> locally, prints `written`, waits for <go file> to exist (another machine has
	// changed the key meanwhile), synchronises, and prints `conflict <name> <discarded> <winner>` for the first conflict
	// `Defaults.iCloud.conflicts` tells of; exits 1 if none comes within <seconds>.
	"sync-lose-conflict": { arguments in
		guard arguments.count == 6, let seconds = Double(arguments[5]) else {
			return ObservationCommand.usage("sync-lose-conflict <endpoint> <prefix> <name> <value> <go file> <seconds>")
		}
		Defaults.iCloud.isSyncingAutomatically = false
		let key = SyncCommand.start(arguments[0], arguments[1], names: [arguments[2]])[arguments[2]]!
		guard SyncCommand.synchronizeOnce() == "synced" else {
			return 1
		}
		let conflicts = Defaults.iCloud.conflicts
		Defaults[key] = arguments[3]
		FileHandle.standardOutput.write(Data("written\n".utf8))
		let deadline = Date().addingTimeInterval(seconds)
		while !FileManager.default.fileExists(atPath: arguments[4]) {
			guard Date() < deadline else {
				return 1
			}
			usleep(10_000)
		}
		let outcome = ObservationCommand.Outcome()
		Task {
			for await conflict in conflicts {
				let text =
					"conflict \(conflict.keyName) \(conflict.discardedLocalValue ?? "-") \(conflict.winningRemoteValue ?? "-")"
				FileHandle.standardOutput.write(Data((text + "\n").utf8))
				outcome.finish(0)
				return
			}
		}
		_ = SyncCommand.synchronizeOnce()
		return outcome.wait(seconds: seconds) ?? 1
	},
	// sync-reconfigure <folder>: configures `Defaults.iCloud` for `<folder>/app.plist` with the state file
	// `<folder>/one.sync.json`, then again with `<folder>/two.sync.json` (etcd is never asked); prints each failure
	// reported, `failure <message>`, then `done`.
	"sync-reconfigure": { arguments in
		guard arguments.count == 1 else {
			return ObservationCommand.usage("sync-reconfigure <folder>")
		}
		Defaults.failureHandler = { failure in print("failure \(failure.message)") }
		Defaults.iCloud.isSyncingAutomatically = false
		let folder = URL(filePath: arguments[0])
		let store = Defaults.FileStore.at(folder.appending(path: "app.plist"))
		for name in ["one", "two"] {
			Defaults.iCloud.configure(
				remote: try! EtcdClient(endpoints: ["http://127.0.0.1:9"]), prefix: "/reconfigured/", store: store,
				stateFile: folder.appending(path: "\(name).sync.json"))
		}
		print("done")
		return 0
	},
	// sync-configure-in-handler <folder>: configures `Defaults.iCloud` for `<folder>/app.plist`, whose sync journal the
	// test made unreadable (etcd is never reached), and synchronises once: its first step reports the journal, and
	// the failure handler configures `Defaults.iCloud` again for the same store, then prints `configured`. Prints
	// `done` at the end.
	"sync-configure-in-handler": { arguments in
		guard arguments.count == 1 else {
			return ObservationCommand.usage("sync-configure-in-handler <folder>")
		}
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]).appending(path: "app.plist"))
		let configure: @Sendable () -> Void = {
			Defaults.iCloud.configure(
				remote: try! EtcdClient(endpoints: ["http://127.0.0.1:9"]), prefix: "/in-handler/", store: store)
		}
		let isConfiguredAgain = Mutex(false)
		Defaults.failureHandler = { failure in
			guard failure.message.contains("sync journal"), isConfiguredAgain.withLock({ !$0 }) else {
				return
			}
			isConfiguredAgain.withLock { $0 = true }
			configure()
			print("configured")
		}
		Defaults.iCloud.isSyncingAutomatically = false
		configure()
		_ = SyncCommand.synchronizeOnce()
		print("done")
		return 0
	},
]

enum SyncCommand {
	/// Synchronises once and says how it went: `synced`, `offline`, or `connected, not all synced`.
	static func synchronizeOnce() -> String {
		let isSynced = blocking { await Defaults.iCloud.synchronize() }
		return isSynced ? "synced" : Defaults.iCloud.status.isConnected ? "connected, not all synced" : "offline"
	}

	static func expand(_ argument: String) -> [(name: String, value: String?)] {
		let (pattern, value): (String, String?) =
			if let separator = argument.firstIndex(of: "=") {
				(
					String(argument[..<separator]),
					String(argument[argument.index(after: separator)...]).replacing(/^-$/, with: "")
				)
			} else {
				(argument, nil)
			}
		let written = value.flatMap { $0.isEmpty ? nil : $0 }
		guard let star = pattern.firstIndex(of: "*"), let count = Int(pattern[pattern.index(after: star)...]) else {
			return [(pattern, written)]
		}
		let base = pattern[..<star]
		return (0..<count).map { ("\(base)\($0)", written) }
	}

	/// Configures sync of the string keys `names` with etcd, in the background as an app would. Its requests time out
	/// after 2 s, or after `DEFAULTS_TEST_REQUEST_TIMEOUT` seconds when set (a test of a silent endpoint sets it past
	/// the child's time limit, so that only a wait of the package's own can end what waits for an answer).
	static func start(_ endpoint: String, _ prefix: String, names: [String]) -> [String: Defaults.Key<String?>] {
		var keys: [String: Defaults.Key<String?>] = [:]
		for name in names {
			let key = Defaults.Key<String?>(name)
			keys[name] = key
			Defaults.iCloud.add(key)
		}
		let environment = ProcessInfo.processInfo.environment
		let credentials = environment["DEFAULTS_TEST_ETCD_USER"].map {
			EtcdClient.Credentials(user: $0, password: environment["DEFAULTS_TEST_ETCD_PASSWORD"] ?? "")
		}
		let requestTimeout = environment["DEFAULTS_TEST_REQUEST_TIMEOUT"].flatMap(TimeInterval.init) ?? 2
		Defaults.iCloud.configure(
			remote: try! EtcdClient(endpoints: [endpoint], credentials: credentials, requestTimeout: requestTimeout),
			prefix: prefix)
		return keys
	}

	static func blocking<Result: Sendable>(_ work: @escaping @Sendable () async -> Result) -> Result {
		let semaphore = DispatchSemaphore(value: 0)
		let box = ResultBox<Result>()
		Task {
			box.value = await work()
			semaphore.signal()
		}
		semaphore.wait()
		return box.value!
	}

	private final class ResultBox<Value>: @unchecked Sendable {
		var value: Value?
	}
}
