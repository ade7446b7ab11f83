import Defaults
import DefaultsEtcd
import Foundation
import Synchronization

#if canImport(Glibc)
	import Glibc
#endif

/// One child process of the fleet: `engines` machines, each a file store in a folder of its own, an `EtcdClient` of its
/// own and a running sync engine, so each holds its own watch and its own connections as a machine would. It answers
/// the coordinator's commands on standard input with one line each on standard output.
final class Machines: @unchecked Sendable {
	let engines: [Defaults.SyncEngine]
	let stores: [Defaults.FileStore]
	/// Per machine and key: the value its observer heard last and when (wall clock, ns), so that arrival is timed where
	/// the app would see it, not at a later poll.
	private let heard: Mutex<[[String: (value: String, at: Int64)]]>
	private var observations: [Defaults.Observation] = []
	let names: [String]

	/// Machines whose number in the fleet is 2 modulo 3 (a third) reach etcd through `relayed`, the endpoints the
	/// partition cuts.
	init(
		process: Int, count: Int, endpoints: [String], relayed: [String], prefix: String, folder: URL, names: [String],
		observed: [String]
	) {
		self.names = names
		var engines: [Defaults.SyncEngine] = []
		var stores: [Defaults.FileStore] = []
		for index in 0..<count {
			let machineFolder = folder.appending(path: "p\(process)/m\(index)")
			try! FileManager.default.createDirectory(at: machineFolder, withIntermediateDirectories: true)
			let store = Defaults.FileStore.at(machineFolder.appending(path: "settings.plist"))
			// Machines spread over the members, as a fleet given the three endpoints in different orders would be.
			let number = process * count + index
			let first = number % endpoints.count
			let own = number % 3 == 2 ? relayed : endpoints
			let order = Array(own[first...] + own[..<first])
			let client = try! EtcdClient(endpoints: order)
			let engine = Defaults.SyncEngine(remote: client, prefix: prefix, store: store)
			engine.add(names)
			engines.append(engine)
			stores.append(store)
		}
		self.engines = engines
		self.stores = stores
		heard = Mutex(Array(repeating: [:], count: count))
		for (index, store) in stores.enumerated() {
			for name in observed {
				let key = Defaults.Key<String>(name, default: "", suite: store)
				observations.append(
					Defaults.observe(key, options: []) { [weak self] change in
						let now = wallClock()
						self?.heard.withLock { $0[index][name] = (change.newValue, now) }
					})
			}
		}
	}

	func start() {
		for engine in engines {
			engine.start()
		}
	}

	/// How many machines report a running watch.
	var connectedCount: Int {
		engines.count { $0.status.isConnected }
	}

	/// Writes `value` on machine `index`, returning the wall-clock time just before the write.
	func write(_ name: String, value: String, on index: Int) -> Int64 {
		let key = Defaults.Key<String>(name, default: "", suite: stores[index])
		let now = wallClock()
		stores[index][key] = value
		return now
	}

	/// Waits until every machine holds `value` for `name`, checking every 10 ms, at most `timeout`; returns, per machine,
	/// when its observer heard the value (or when the check first saw it, for a machine whose observer did not fire).
	func awaitValue(_ name: String, _ value: String, timeout: Duration) async -> [Int64?] {
		let deadline = ContinuousClock.now + timeout
		var seen: [Int64?] = Array(repeating: nil, count: stores.count)
		while true {
			let now = wallClock()
			for index in stores.indices where seen[index] == nil {
				if (stores[index].storedValue(forKey: name) as? String) == value {
					seen[index] = now
				}
			}
			if !seen.contains(nil) || ContinuousClock.now >= deadline {
				break
			}
			try? await Task.sleep(for: .milliseconds(10))
		}
		let heard = heard.withLock { $0 }
		return seen.indices.map { index in
			guard seen[index] != nil else {
				return nil
			}
			if let record = heard[index][name], record.value == value {
				return min(record.at, seen[index]!)
			}
			return seen[index]
		}
	}

	/// Waits until every machine's store holds every synced name, checking every 20 ms; returns when each did.
	func awaitAllNames(timeout: Duration) async -> [Int64?] {
		let deadline = ContinuousClock.now + timeout
		var seen: [Int64?] = Array(repeating: nil, count: stores.count)
		while true {
			let now = wallClock()
			for index in stores.indices where seen[index] == nil {
				if stores[index].storedKeys().count >= names.count {
					seen[index] = now
				}
			}
			if !seen.contains(nil) || ContinuousClock.now >= deadline {
				return seen
			}
			try? await Task.sleep(for: .milliseconds(20))
		}
	}

	func stop() {
		for observation in observations {
			observation.invalidate()
		}
		for engine in engines {
			engine.stop()
		}
		_ = Defaults.FileStore.flushAll()
	}
}

/// Nanoseconds since the epoch: the one clock every process of the fleet shares on this machine.
func wallClock() -> Int64 {
	var time = timespec()
	clock_gettime(CLOCK_REALTIME, &time)
	return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// Resident memory and thread count of a process, from `/proc/<pid>/status` (`self` for this one).
func residentKilobytes(of process: String = "self") -> (rss: Int, threads: Int) {
	guard let text = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else {
		return (0, 0)
	}
	var rss = 0
	var threads = 0
	for line in text.split(separator: "\n") {
		let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
		if fields.first == "VmRSS:", fields.count > 1 {
			rss = Int(fields[1]) ?? 0
		} else if fields.first == "Threads:", fields.count > 1 {
			threads = Int(fields[1]) ?? 0
		}
	}
	return (rss, threads)
}

/// Open descriptors of this process.
func openDescriptorCount() -> Int {
	(try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
}

/// The child's side: `Fleet machines <process> <count> <endpoints,> <relayed endpoints,> <prefix> <folder>
/// <names,|cold:N>`, then commands
/// on standard input, one per line:
///
/// - `write <name> <machine> <value>` → `wrote <ns>`
/// - `await <name> <value> <timeout s>` → `arrived <ns or - per machine, comma-separated>`
/// - `names <timeout s>` → `complete <ns or - per machine>` (every synced name stored)
/// - `status` → `status <connected> <rss KB> <threads> <descriptors>`
/// - `quit` → `bye`, after the engines stopped and the stores flushed
func runMachines(_ arguments: [String]) async {
	let process = Int(arguments[0])!
	let count = Int(arguments[1])!
	let endpoints = arguments[2].split(separator: ",").map(String.init)
	let relayed = arguments[3].split(separator: ",").map(String.init)
	let prefix = arguments[4]
	let folder = URL(filePath: arguments[5])
	let names: [String]
	let observed: [String]
	if arguments[6].hasPrefix("cold:") {
		names = (0..<Int(arguments[6].dropFirst(5))!).map { "k\($0)" }
		observed = []
	} else {
		names = arguments[6].split(separator: ",").map(String.init)
		observed = names
	}
	let base = residentKilobytes()
	reply("base \(base.rss) \(base.threads) \(openDescriptorCount())")
	let machines = Machines(
		process: process, count: count, endpoints: endpoints, relayed: relayed, prefix: prefix, folder: folder,
		names: names, observed: observed)
	machines.start()
	reply("started \(wallClock())")
	while let line = readLine() {
		let words = line.split(separator: " ").map(String.init)
		switch words.first {
		case "write":
			let at = machines.write(words[1], value: words[3], on: Int(words[2])!)
			reply("wrote \(at)")
		case "await":
			let times = await machines.awaitValue(words[1], words[2], timeout: .seconds(Double(words[3])!))
			reply("arrived " + times.map { $0.map(String.init) ?? "-" }.joined(separator: ","))
		case "names":
			let times = await machines.awaitAllNames(timeout: .seconds(Double(words[1])!))
			reply("complete " + times.map { $0.map(String.init) ?? "-" }.joined(separator: ","))
		case "status":
			let usage = residentKilobytes()
			reply("status \(machines.connectedCount) \(usage.rss) \(usage.threads) \(openDescriptorCount())")
		case "quit":
			machines.stop()
			reply("bye")
			return
		default:
			reply("error unknown command: \(line)")
		}
	}
	machines.stop()
}

/// One line to the coordinator, written whole.
func reply(_ line: String) {
	let bytes = Array((line + "\n").utf8)
	bytes.withUnsafeBytes { buffer in
		var offset = 0
		while offset < buffer.count {
			let written = Glibc.write(1, buffer.baseAddress! + offset, buffer.count - offset)
			if written <= 0 {
				exit(1)
			}
			offset += written
		}
	}
}
