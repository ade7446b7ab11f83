import Defaults
import DefaultsEtcd
import DefaultsTestSupport
import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// The fault-injection suite's machine: one process syncing `own0…own<machines-1>` and `shared0…` through etcd,
/// writing a seeded schedule to its own key and the shared keys, and logging what it did to a file that survives
/// `kill -9` (each line is one `write(2)` in append mode).
///
/// `sync-machine <endpoints,…> <prefix> <id> <machines> <incarnation> <seed> <writes> <interval-ms> <shared-keys>
/// <removal-percent> <folder> [<increment-percent> <counters> <views-while-writing 0|1>]`
///
/// Several of these processes may share one settings file (one `XDG_CONFIG_HOME`), as the processes of one app do:
/// each still has its own id, key and log. With `<increment-percent>` above 0, that share of the schedule's steps adds
/// 1 to one of the shared integer counters `count0…` with the asynchronous `Defaults.update` instead of writing.
///
/// Log lines (`<folder>/log-<id>`), values `-` for removed:
/// - `start <incarnation>`
/// - `try <key> <value> <epoch-ms>` before a write, `ack <key> <value>` once the settings file holding it is flushed
/// - `inc <counter> <epoch-ms>` before an increment, then `incok <counter> <value> <epoch-ms>` (committed: the value it
///   stored, and when the answer came),
///   `incfail <counter> <reason>` (nothing changed) or `incunknown <counter>` (it may have been committed); a kill
///   between `inc` and its answer leaves the outcome unknown too
/// - `done` after the schedule
/// - `view <epoch-ms> <pending> <key>=<value>,…` whenever the local values or the pending count change after that
///   (from the start with `<views-while-writing>` 1; counters at 0 show as `-`, as etcd holds nothing for them)
/// - `final <key>=<value>,…` when `<folder>/stop` appears; then the process exits 0
///
/// Written values are `m<id>.<incarnation>.<sequence>`: unique, so the checker can tell every write apart.
let syncMachineCommands: [String: @Sendable ([String]) -> Int32] = [
	"sync-machine": { arguments in
		guard arguments.count == 11 || arguments.count == 14, let id = Int(arguments[2]),
			let machines = Int(arguments[3]),
			let incarnation = Int(arguments[4]), let seed = UInt64(arguments[5]), let writes = Int(arguments[6]),
			let interval = Int(arguments[7]), let sharedCount = Int(arguments[8]),
			let removalPercent = Int(arguments[9])
		else {
			return ObservationCommand.usage(
				"sync-machine <endpoints,…> <prefix> <id> <machines> <incarnation> <seed> <writes> <interval-ms> "
					+ "<shared-keys> <removal-percent> <folder> [<increment-percent> <counters> <views-while-writing>]")
		}
		let extra = arguments.count == 14 ? arguments[11...].compactMap { Int($0) } : [0, 0, 0]
		guard extra.count == 3 else {
			return ObservationCommand.usage("sync-machine: <increment-percent> <counters> <views-while-writing>")
		}
		let incrementPercent = extra[0]
		let counterCount = incrementPercent > 0 ? max(1, extra[1]) : 0
		let machine = SyncMachine(
			id: id, incarnation: incarnation, folder: URL(filePath: arguments[10]),
			names: (0..<machines).map { "own\($0)" } + (0..<sharedCount).map { "shared\($0)" },
			counterNames: (0..<counterCount).map { "count\($0)" })
		machine.configure(endpoints: arguments[0].split(separator: ",").map(String.init), prefix: arguments[1])
		if extra[2] == 1 {
			Thread.detachNewThread {
				machine.watchUntilStopped()
				exit(0)
			}
		}
		var random = SeededRandom(seed: seed &+ UInt64(id) &* 1_000_003 &+ UInt64(incarnation) &* 7_919)
		for sequence in 0..<writes {
			if counterCount > 0, random.next(below: 100) < UInt64(incrementPercent) {
				machine.increment("count\(random.next(below: UInt64(counterCount)))")
			} else {
				let name =
					sharedCount > 0 && random.next(below: 2) == 0
					? "shared\(random.next(below: UInt64(sharedCount)))" : "own\(id)"
				let isRemoval = random.next(below: 100) < UInt64(removalPercent)
				machine.write(name, isRemoval ? nil : "m\(id).\(incarnation).\(sequence)")
			}
			usleep(UInt32(interval / 2 + Int(random.next(below: UInt64(interval + 1)))) * 1000)
		}
		machine.log("done")
		if extra[2] == 1 {
			// The view thread logs until it is told to stop, and its `final` line ends the log.
			while true { sleep(60) }
		}
		machine.watchUntilStopped()
		return 0
	}
]

/// One machine's keys, its log and its life after the schedule.
struct SyncMachine: Sendable {
	let id: Int
	let incarnation: Int
	let folder: URL
	let names: [String]
	let keys: [String: Defaults.Key<String?>]
	let counterNames: [String]
	let counters: [String: Defaults.Key<Int>]
	private let logDescriptor: Int32

	init(id: Int, incarnation: Int, folder: URL, names: [String], counterNames: [String] = []) {
		self.id = id
		self.incarnation = incarnation
		self.folder = folder
		self.names = names
		keys = Dictionary(uniqueKeysWithValues: names.map { ($0, Defaults.Key<String?>($0)) })
		self.counterNames = counterNames
		counters = Dictionary(uniqueKeysWithValues: counterNames.map { ($0, Defaults.Key<Int>($0, default: 0)) })
		logDescriptor = open(folder.appending(path: "log-\(id)").path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
		log("start \(incarnation)")
	}

	func configure(endpoints: [String], prefix: String) {
		for name in names {
			Defaults.iCloud.add(keys[name]!)
		}
		for name in counterNames {
			Defaults.iCloud.add(counters[name]!)
		}
		Defaults.iCloud.configure(remote: try! EtcdClient(endpoints: endpoints, requestTimeout: 2), prefix: prefix)
	}

	/// One line, one `write(2)`: a line is in the file (the kernel's) once this returns, whatever happens next.
	func log(_ line: String) {
		let bytes = Array((line + "\n").utf8)
		_ = bytes.withUnsafeBytes { writeBytes(logDescriptor, $0.baseAddress, $0.count) }
	}

	func write(_ name: String, _ value: String?) {
		log("try \(name) \(value ?? "-") \(Int64(Date().timeIntervalSince1970 * 1000))")
		Defaults[keys[name]!] = value
		// The write is acknowledged to its owner once the settings file holds it: from here on it must never be lost.
		if Defaults.standardStore.flush() {
			log("ack \(name) \(value ?? "-")")
		}
	}

	/// One synced atomic update of a counter; each outcome is a line (see the command's lines).
	func increment(_ name: String) {
		let key = counters[name]!
		log("inc \(name) \(Int64(Date().timeIntervalSince1970 * 1000))")
		let outcome = SyncCommand.blocking { () -> String in
			do {
				let value = try await Defaults.update(key) { $0 += 1 }
				return "incok \(name) \(value) \(Int64(Date().timeIntervalSince1970 * 1000))"
			} catch let error as Defaults.SyncedUpdateError where error.changedNothing {
				return "incfail \(name) \(error.reason)"
			} catch {
				return "incunknown \(name)"
			}
		}
		log(outcome)
		_ = Defaults.standardStore.flush()
	}

	var view: String {
		(names.map { "\($0)=\(Defaults[keys[$0]!] ?? "-")" }
			+ counterNames.map { name in
				let value = Defaults[counters[name]!]
				return "\(name)=\(value == 0 ? "-" : String(value))"
			})
			.joined(separator: ",")
	}

	/// Logs every change of the local values (with the time, for heal-to-convergence times) until told to stop.
	func watchUntilStopped() {
		let stop = folder.appending(path: "stop")
		let parent = getppid()
		// A machine whose test process is gone (crashed, killed) stops too, rather than polling forever.
		let deadline = Date().addingTimeInterval(600)
		var last = ""
		while true {
			let isStopping =
				FileManager.default.fileExists(atPath: stop.path) || getppid() != parent || Date() > deadline
			let current = "\(Defaults.iCloud.status.pendingCount) \(view)"
			if current != last {
				last = current
				log("view \(Int64(Date().timeIntervalSince1970 * 1000)) \(current)")
			}
			if isStopping {
				_ = Defaults.standardStore.flush()
				log("final \(view)")
				return
			}
			usleep(10_000)
		}
	}
}

#if canImport(Glibc)
	private let writeBytes = Glibc.write
#else
	private let writeBytes = Darwin.write
#endif
