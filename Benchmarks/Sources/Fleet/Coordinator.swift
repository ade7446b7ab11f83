import Defaults
import DefaultsEtcd
import Foundation

#if canImport(Glibc)
	import Glibc
#endif

/// One child process of machines, spoken to through its standard input and output.
final class Child {
	let index: Int
	let process: Process
	let input: FileHandle
	let output: FileHandle

	/// Its machines' reports to standard error (a sync engine's `Failure`s) go to `log`.
	init(executable: String, index: Int, arguments: [String], log: URL) throws {
		self.index = index
		process = Process()
		process.executableURL = URL(filePath: executable)
		process.arguments = ["machines", "\(index)"] + arguments
		let inputPipe = Pipe()
		let outputPipe = Pipe()
		process.standardInput = inputPipe
		process.standardOutput = outputPipe
		_ = FileManager.default.createFile(atPath: log.path, contents: nil)
		process.standardError = try FileHandle(forWritingTo: log)
		try process.run()
		input = inputPipe.fileHandleForWriting
		output = outputPipe.fileHandleForReading
	}

	func send(_ line: String) {
		input.write(Data((line + "\n").utf8))
	}

	/// The next reply, whose first word must be `word`; the rest of its words.
	func expect(_ word: String) throws -> [String] {
		guard let line = output.availableLine() else {
			throw FleetError("process \(index) ended before answering \(word)")
		}
		let words = line.split(separator: " ").map(String.init)
		guard words.first == word else {
			throw FleetError("process \(index) answered \"\(line)\" instead of \(word)")
		}
		return Array(words.dropFirst())
	}

	func stop() {
		if process.isRunning {
			send("quit")
			_ = try? expect("bye")
		}
		if process.isRunning {
			kill(process.processIdentifier, SIGKILL)
		}
		process.waitUntilExit()
	}
}

struct FleetOptions {
	var machines = 100
	var processes = 10
	var writes = 10
	var coldKeys = 1_000
	var partitionSeconds = 10.0
	var etcd = "/usr/bin/etcd"
	var relayScript = ""
	var folder = FileManager.default.temporaryDirectory.appending(path: "defaults-fleet-\(UUID().uuidString)")
}

/// Milliseconds, from nanoseconds.
func ms(_ nanoseconds: Int64) -> Double { Double(nanoseconds) / 1e6 }

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
	guard !sorted.isEmpty else {
		return .nan
	}
	return sorted[min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)]
}

/// A line of the report, written at once (standard output may be a pipe).
func say(_ line: String) {
	reply(line)
}

func format(_ value: Double, _ digits: Int = 1) -> String {
	String(format: "%.\(digits)f", value)
}

/// Runs the fleet: etcd, the relay, the machines, each measurement in turn; prints each figure as it is measured.
func runFleet(_ options: FleetOptions) throws {
	let executable = URL(filePath: CommandLine.arguments[0]).standardizedFileURL.path
	try FileManager.default.createDirectory(at: options.folder, withIntermediateDirectories: true)
	let perProcess = options.machines / options.processes
	precondition(perProcess * options.processes == options.machines, "machines must divide evenly among processes")
	say("fleet: \(options.machines) machines in \(options.processes) processes of \(perProcess), etcd \(options.etcd)")
	say("host: \(ProcessInfo.processInfo.activeProcessorCount) cores, load average \(loadAverage())")

	let cluster = try FleetCluster(etcd: options.etcd, folder: options.folder, relayScript: options.relayScript)
	var children: [Child] = []
	defer {
		for child in children {
			child.stop()
		}
		cluster.stop()
		try? FileManager.default.removeItem(at: options.folder)
	}
	let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
	func etcdSummary() -> String {
		let usage = cluster.usage()
		return "etcd members: resident " + usage.map { "\($0.rss / 1024) MB" }.joined(separator: ", ")
			+ "; descriptors " + usage.map { "\($0.descriptors)" }.joined(separator: ", ")
	}
	/// CPU time of every machine process, in clock ticks.
	func machineTicks() -> Int {
		children.map { cpuTicks(of: "\($0.process.processIdentifier)") }.reduce(0, +)
	}
	/// The CPU the machine processes (all together, in seconds) spent in the last `measuringEtcdCPU`.
	var machineCPUSeconds = 0.0
	/// etcd's CPU over `body`, as a share of one core per member, and the time taken; the machines' CPU in
	/// `machineCPUSeconds`.
	func measuringEtcdCPU<T>(_ body: () throws -> T) rethrows -> (T, cpu: [Double], seconds: Double) {
		let before = cluster.usage().map(\.ticks)
		let machinesBefore = machineTicks()
		let started = Date()
		let result = try body()
		let seconds = Date().timeIntervalSince(started)
		let after = cluster.usage().map(\.ticks)
		machineCPUSeconds = Double(machineTicks() - machinesBefore) / ticksPerSecond
		return (result, zip(before, after).map { Double($1 - $0) / ticksPerSecond / seconds * 100 }, seconds)
	}
	func cpuText(_ cpu: [Double]) -> String {
		cpu.map { format($0) + "%" }.joined(separator: ", ")
	}
	say(etcdSummary() + " (empty)")
	let burst = 200
	/// Puts `burst` values of `key` one after another through member 0's gateway, in one `curl`; the seconds taken.
	func putBurst(_ key: String) -> Double {
		let encodedKey = Data(key.utf8).base64EncodedString()
		var arguments = ["-s"]
		for index in 0..<burst {
			if index > 0 {
				arguments.append("--next")
			}
			let value = Data("burst \(index)".utf8).base64EncodedString()
			arguments += [
				"-o", "/dev/null", "-X", "POST", "-d", "{\"key\":\"\(encodedKey)\",\"value\":\"\(value)\"}",
				cluster.endpoints[0] + "/v3/kv/put",
			]
		}
		let started = Date()
		let put = Process()
		put.executableURL = URL(filePath: "/usr/bin/curl")
		put.arguments = arguments
		try? put.run()
		put.waitUntilExit()
		return Date().timeIntervalSince(started)
	}
	// The same burst with nobody watching, for what the watches add to a put.
	let (quietPutSeconds, quietCPU, quietSeconds) = measuringEtcdCPU { putBurst("/fleet/quiet") }
	let quietEtcdSeconds = quietCPU.map { $0 / 100 * quietSeconds }.reduce(0, +)
	say(
		"\(burst) puts with no watch: \(format(quietPutSeconds, 2)) s, etcd CPU \(format(quietEtcdSeconds, 2)) s (all members); load \(loadAverage())"
	)

	// A third of the machines (every third one) reach etcd through the relay, so that the partition can cut them off.
	let prefix = "/fleet/steady/"
	let spawned = wallClock()
	let logs = options.folder.appending(path: "logs")
	try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
	let endpointArguments = [cluster.endpoints, cluster.relayedEndpoints].map { $0.joined(separator: ",") }
	for index in 0..<options.processes {
		children.append(
			try Child(
				executable: executable, index: index,
				arguments: ["\(perProcess)"] + endpointArguments + [
					prefix, options.folder.appending(path: "steady").path, "value,side",
				], log: logs.appending(path: "steady\(index).log")))
	}
	var baseResident = 0
	var baseThreads = 0
	for child in children {
		let base = try child.expect("base")
		baseResident = max(baseResident, Int(base[0])!)
		baseThreads = max(baseThreads, Int(base[1])!)
		_ = try child.expect("started")
	}
	// Connected: each engine's watch has answered.
	let connectDeadline = Date().addingTimeInterval(300)
	var statuses: [[Int]] = []
	while true {
		statuses = try children.map { child in
			child.send("status")
			return try child.expect("status").map { Int($0)! }
		}
		if statuses.map({ $0[0] }).reduce(0, +) == options.machines || Date() > connectDeadline {
			break
		}
		usleep(200_000)
	}
	let connected = statuses.map { $0[0] }.reduce(0, +)
	say(
		"start: \(connected) of \(options.machines) machines connected (etcd answered their first read) \(format(ms(wallClock() - spawned) / 1000, 2)) s after the processes were spawned"
	)
	guard connected == options.machines else {
		throw FleetError("only \(connected) machines connected within 300 s")
	}
	let cutOffMachines = (0..<options.machines).count { $0 % 3 == 2 }
	/// Lines the machines wrote to standard error (each a sync `Failure`: a lost connection, a retry) in logs `kind`.
	func failureReports(_ kind: String) -> Int {
		(0..<options.processes).map { index in
			((try? String(contentsOf: logs.appending(path: "\(kind)\(index).log"), encoding: .utf8)) ?? "")
				.split(separator: "\n").count
		}.reduce(0, +)
	}

	// Idle: every watch open, nothing written.
	let (_, idleCPU, idleSeconds) = measuringEtcdCPU { sleep(10) }
	say(
		"idle \(format(idleSeconds)) s, \(options.machines) watches: etcd CPU \(cpuText(idleCPU)) of a core; machines' CPU \(format(machineCPUSeconds / idleSeconds * 100))% of a core (\(format(machineCPUSeconds / idleSeconds / Double(options.machines) * 1e5, 1)) ms per machine per 100 s); \(etcdSummary()); TIME_WAIT sockets \(timeWaitSockets()); load \(loadAverage())"
	)
	let idleMachineRate = machineCPUSeconds / idleSeconds
	let idleEtcdRate = idleCPU
	for name in ["etcd_debugging_mvcc_watcher_total", "etcd_debugging_mvcc_watch_stream_total"] {
		say(
			"  \(name): "
				+ (0..<3).map { cluster.metric(name, member: $0).map { format($0, 0) } ?? "?" }.joined(separator: ", "))
	}
	func machineMemory(_ label: String) {
		let rows = statuses
		let resident = rows.map { $0[1] }
		let perMachine = resident.map { Double($0 - baseResident) / Double(perProcess) }
		say(
			"\(label): machine processes resident \(resident.min()! / 1024)-\(resident.max()! / 1024) MB (\(perProcess) machines each; a process with none: \(baseResident / 1024) MB); per machine \(format(perMachine.min()! / 1024, 2))-\(format(perMachine.max()! / 1024, 2)) MB; threads \(rows.map { $0[2] }.min()!)-\(rows.map { $0[2] }.max()!) per process (\(baseThreads) with none); descriptors \(rows.map { $0[3] }.min()!)-\(rows.map { $0[3] }.max()!)"
		)
	}
	// Measured again after the idle time: a machine counts as connected once etcd answered its first read, a moment
	// before its watch opens.
	statuses = try children.map { child in
		child.send("status")
		return try child.expect("status").map { Int($0)! }
	}
	machineMemory("memory, idle")

	// Writes: machine 0 of process 0 writes; every other machine's observer times the arrival.
	var relayedLatencies: [Double] = []
	let (latencies, writeCPU, writeSeconds) = try measuringEtcdCPU { () throws -> [Double] in
		var latencies: [Double] = []
		for write in 0..<options.writes {
			let value = "w\(write)-\(UUID().uuidString)"
			children[0].send("write value 0 \(value)")
			let wrote = Int64(try children[0].expect("wrote")[0])!
			for child in children {
				child.send("await value \(value) 60")
			}
			var arrivals: [Double] = []
			for child in children {
				let times = try child.expect("arrived")[0].split(separator: ",")
				for (machine, time) in times.enumerated() where !(child.index == 0 && machine == 0) {
					guard let time = Int64(time) else {
						throw FleetError(
							"write \(write) did not reach machine \(machine) of process \(child.index) in 60 s")
					}
					arrivals.append(ms(time - wrote))
					if (child.index * perProcess + machine) % 3 == 2 {
						relayedLatencies.append(ms(time - wrote))
					}
				}
			}
			arrivals.sort()
			say(
				"  write \(write): arrived at \(arrivals.count) machines, p50 \(format(percentile(arrivals, 0.5))) ms, p99 \(format(percentile(arrivals, 0.99))) ms, max \(format(arrivals.last!)) ms"
			)
			latencies += arrivals
		}
		return latencies.sorted()
	}
	relayedLatencies.sort()
	say(
		"arrival over \(options.writes) writes × \(options.machines - 1) machines: p50 \(format(percentile(latencies, 0.5))) ms, p99 \(format(percentile(latencies, 0.99))) ms, max \(format(latencies.last!)) ms (the third behind the relay: p50 \(format(percentile(relayedLatencies, 0.5))) ms, p99 \(format(percentile(relayedLatencies, 0.99))) ms); etcd CPU during writes \(cpuText(writeCPU)) (\(format(writeSeconds)) s); machines' CPU \(format(machineCPUSeconds, 2)) s, \(format(machineCPUSeconds / writeSeconds * 100))% of a core; above idle, per write and machine: \(format((machineCPUSeconds - idleMachineRate * writeSeconds) / Double(options.writes * options.machines) * 1000, 2)) ms in the machine, \(format(zip(writeCPU, idleEtcdRate).map { ($0 - $1) / 100 * writeSeconds }.reduce(0, +) / Double(options.writes * options.machines) * 1e6, 1)) µs in etcd (all members); load \(loadAverage())"
	)

	// etcd's cost per delivered event, apart from the watches' standing cost: a burst of puts to a key under the prefix
	// that no machine syncs (so every watch still carries each event, and no machine applies it), in one `curl`.
	var putSeconds = 0.0
	let (_, burstCPU, burstSeconds) = measuringEtcdCPU {
		putSeconds = putBurst(prefix + "unsynced")
		// Time for every watch to carry the last event.
		sleep(5)
	}
	let burstEtcdSeconds = zip(burstCPU, idleEtcdRate).map { ($0 - $1) / 100 * burstSeconds }.reduce(0, +)
	say(
		"burst: \(burst) puts to an unsynced key under the prefix, each carried by \(options.machines) watches, in \(format(burstSeconds, 1)) s (the puts \(format(putSeconds, 1)) s, against \(format(quietPutSeconds, 1)) s with no watch before the machines started, then 5 s): etcd CPU \(cpuText(burstCPU)); above idle \(format(burstEtcdSeconds, 2)) s of CPU, \(format(burstEtcdSeconds / Double(burst * options.machines) * 1e6, 1)) µs per delivered event (all members, commit included), \(format((burstEtcdSeconds - quietEtcdSeconds) / Double(burst * options.machines) * 1e6, 1)) µs without the puts' own cost; machines' CPU \(format(machineCPUSeconds, 2)) s; load \(loadAverage())"
	)

	// Partition: the relay stops carrying anything for the cut-off third; one machine on each side writes.
	let partitionValue = "p-\(UUID().uuidString)"
	let sideValue = "s-\(UUID().uuidString)"
	let reportsBeforeCut = failureReports("steady")
	cluster.cut()
	let cutAt = wallClock()
	usleep(1_000_000)
	children[0].send("write value 0 \(partitionValue)")
	_ = try children[0].expect("wrote")
	// Machine 2 of process 0 is number 2 in the fleet: cut off.
	children[0].send("write side 2 \(sideValue)")
	_ = try children[0].expect("wrote")
	let healAt = cutAt + Int64(options.partitionSeconds * 1e9)
	let wait = healAt - wallClock()
	if wait > 0 {
		usleep(UInt32(wait / 1000))
	}
	statuses = try children.map { child in
		child.send("status")
		return try child.expect("status").map { Int($0)! }
	}
	let connectedDuringCut = statuses.map { $0[0] }.reduce(0, +)
	let reportsDuringCut = failureReports("steady") - reportsBeforeCut
	cluster.heal()
	let healed = wallClock()
	var converged: [Double] = []
	var beforeHeal = 0
	for (name, value) in [("value", partitionValue), ("side", sideValue)] {
		for child in children {
			child.send("await \(name) \(value) 120")
		}
		for child in children {
			for (machine, time) in try child.expect("arrived")[0].split(separator: ",").enumerated() {
				guard let time = Int64(time) else {
					throw FleetError(
						"machine \(machine) of process \(child.index) had not converged on \(name) 120 s after the heal"
					)
				}
				if name == "value" && time < healed { beforeHeal += 1 }
				converged.append(ms(max(0, time - healed)))
			}
		}
	}
	converged.sort()
	say(
		"partition: \(cutOffMachines) of \(options.machines) machines cut off for \(format(options.partitionSeconds, 0)) s (\(options.machines - connectedDuringCut) reported themselves disconnected by its end, \(reportsDuringCut) failure reports; \(beforeHeal) machines held the connected side's write before the heal); after the heal every machine held both sides' writes in \(format(converged.last! / 1000, 2)) s (p50 \(format(percentile(converged, 0.5) / 1000, 2)) s, p99 \(format(percentile(converged, 0.99) / 1000, 2)) s); load \(loadAverage())"
	)
	statuses = try children.map { child in
		child.send("status")
		return try child.expect("status").map { Int($0)! }
	}
	machineMemory("memory, after writes and partition")
	say(etcdSummary())
	for child in children {
		child.stop()
	}
	children = []

	// Cold start: a prefix of `coldKeys` keys, and every machine new (empty folders), started at once.
	let coldPrefix = "/fleet/cold/"
	let seederStore = Defaults.InMemoryStore()
	let seeder = Defaults.SyncEngine(
		remote: try EtcdClient(endpoints: cluster.endpoints), prefix: coldPrefix, store: seederStore)
	let names = (0..<options.coldKeys).map { "k\($0)" }
	seeder.add(names)
	for name in names {
		try seederStore.write("value of \(name), as a setting might hold it", forKey: name)
	}
	guard waitFor(seeder.synchronize) else {
		throw FleetError("the seeder could not write the cold prefix")
	}
	let (coldTimes, coldCPU, _) = try measuringEtcdCPU { () throws -> [Double] in
		let started = wallClock()
		for index in 0..<options.processes {
			children.append(
				try Child(
					executable: executable, index: index,
					arguments: ["\(perProcess)", endpointArguments[0], endpointArguments[0]] + [
						coldPrefix, options.folder.appending(path: "cold").path, "cold:\(options.coldKeys)",
					], log: logs.appending(path: "cold\(index).log")))
		}
		for child in children {
			_ = try child.expect("base")
			_ = try child.expect("started")
			child.send("names 900")
		}
		var times: [Double] = []
		for child in children {
			for (machine, time) in try child.expect("complete")[0].split(separator: ",").enumerated() {
				guard let time = Int64(time) else {
					throw FleetError("machine \(machine) of process \(child.index) did not hold every key in 900 s")
				}
				times.append(ms(time - started))
			}
		}
		return times.sorted()
	}
	statuses = try children.map { child in
		child.send("status")
		return try child.expect("status").map { Int($0)! }
	}
	say(
		"cold start of \(options.machines) machines against \(options.coldKeys) keys: all held every key \(format(coldTimes.last! / 1000, 2)) s after the processes were spawned (p50 \(format(percentile(coldTimes, 0.5) / 1000, 2)) s); etcd CPU \(cpuText(coldCPU)); machines' CPU \(format(machineCPUSeconds, 1)) s (\(format(machineCPUSeconds / Double(options.machines) * 1000)) ms per machine, process start included); load \(loadAverage())"
	)
	machineMemory("memory, \(options.coldKeys) keys each")
	say(etcdSummary())
}

/// Runs an async call from synchronous code (the coordinator is synchronous: it waits on its children's pipes).
func waitFor(_ body: @escaping @Sendable () async -> Bool) -> Bool {
	let semaphore = DispatchSemaphore(value: 0)
	let result = ResultBox(false)
	Task {
		result.value = await body()
		semaphore.signal()
	}
	semaphore.wait()
	return result.value
}

/// A result handed from a task to the thread that waits for it: the semaphore orders the task's write before the
/// waiter's read, so no lock is needed.
final class ResultBox<T>: @unchecked Sendable {
	var value: T
	init(_ value: T) { self.value = value }
}
