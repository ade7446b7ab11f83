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
/// <removal-percent> <folder>`
///
/// Log lines (`<folder>/log-<id>`), values `-` for removed:
/// - `start <incarnation>`
/// - `try <key> <value>` before a write, `ack <key> <value>` once the settings file holding it is flushed
/// - `done` after the schedule
/// - `view <epoch-ms> <pending> <key>=<value>,…` whenever the local values or the pending count change after that
/// - `final <key>=<value>,…` when `<folder>/stop` appears; then the process exits 0
///
/// Written values are `m<id>.<incarnation>.<sequence>`: unique, so the checker can tell every write apart.
let syncMachineCommands: [String: @Sendable ([String]) -> Int32] = [
	"sync-machine": { arguments in
		guard arguments.count == 11, let id = Int(arguments[2]), let machines = Int(arguments[3]),
			let incarnation = Int(arguments[4]), let seed = UInt64(arguments[5]), let writes = Int(arguments[6]),
			let interval = Int(arguments[7]), let sharedCount = Int(arguments[8]),
			let removalPercent = Int(arguments[9])
		else {
			return ObservationCommand.usage(
				"sync-machine <endpoints,…> <prefix> <id> <machines> <incarnation> <seed> <writes> <interval-ms> "
					+ "<shared-keys> <removal-percent> <folder>")
		}
		let machine = SyncMachine(
			id: id, incarnation: incarnation, folder: URL(filePath: arguments[10]),
			names: (0..<machines).map { "own\($0)" } + (0..<sharedCount).map { "shared\($0)" })
		machine.configure(endpoints: arguments[0].split(separator: ",").map(String.init), prefix: arguments[1])
		var random = SeededRandom(seed: seed &+ UInt64(id) &* 1_000_003 &+ UInt64(incarnation) &* 7_919)
		for sequence in 0..<writes {
			let name =
				sharedCount > 0 && random.next(below: 2) == 0
				? "shared\(random.next(below: UInt64(sharedCount)))" : "own\(id)"
			let isRemoval = random.next(below: 100) < UInt64(removalPercent)
			machine.write(name, isRemoval ? nil : "m\(id).\(incarnation).\(sequence)")
			usleep(UInt32(interval / 2 + Int(random.next(below: UInt64(interval + 1)))) * 1000)
		}
		machine.log("done")
		machine.watchUntilStopped()
		return 0
	}
]

/// One machine's keys, its log and its life after the schedule.
struct SyncMachine {
	let id: Int
	let incarnation: Int
	let folder: URL
	let names: [String]
	let keys: [String: Defaults.Key<String?>]
	private let logDescriptor: Int32

	init(id: Int, incarnation: Int, folder: URL, names: [String]) {
		self.id = id
		self.incarnation = incarnation
		self.folder = folder
		self.names = names
		keys = Dictionary(uniqueKeysWithValues: names.map { ($0, Defaults.Key<String?>($0)) })
		logDescriptor = open(folder.appending(path: "log-\(id)").path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
		log("start \(incarnation)")
	}

	func configure(endpoints: [String], prefix: String) {
		for name in names {
			Defaults.iCloud.add(keys[name]!)
		}
		Defaults.iCloud.configure(remote: try! EtcdClient(endpoints: endpoints, requestTimeout: 2), prefix: prefix)
	}

	/// One line, one `write(2)`: a line is in the file (the kernel's) once this returns, whatever happens next.
	func log(_ line: String) {
		let bytes = Array((line + "\n").utf8)
		_ = bytes.withUnsafeBytes { writeBytes(logDescriptor, $0.baseAddress, $0.count) }
	}

	func write(_ name: String, _ value: String?) {
		log("try \(name) \(value ?? "-")")
		Defaults[keys[name]!] = value
		// The write is acknowledged to its owner once the settings file holds it: from here on it must never be lost.
		if Defaults.standardStore.flush() {
			log("ack \(name) \(value ?? "-")")
		}
	}

	var view: String {
		names.map { "\($0)=\(Defaults[keys[$0]!] ?? "-")" }.joined(separator: ",")
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
