import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// The machines of a fault-injection run: `DefaultsTestHelper sync-machine` child processes writing a seeded schedule
/// and logging it (see `SyncMachineCommand.swift` in the helper). Each process has a config folder of its own, except
/// the first `sharedFiles × processesPerSharedFile`: those share one folder (one settings file, one prefix) per
/// `processesPerSharedFile`, as the processes of one app on one machine do. Indices (`kill`, `launch`, `log`) are
/// processes; ``machine(of:)`` is the folder a process writes.
///
/// ```swift
/// let fleet = try MachineFleet(endpoints: cluster.endpoints, schedule: .init(seed: 7))
/// try await fleet.kill(2); try fleet.launch(2)
/// ```
final class MachineFleet: @unchecked Sendable {
	/// What every machine writes.
	struct Schedule: Sendable, CustomStringConvertible {
		var seed: UInt64
		var machines = 5
		var writes = 40
		var intervalMilliseconds = 60
		var sharedKeys = 3
		var removalPercent = 0
		/// Machines made of several processes sharing one settings file, counted in `machines` by their processes.
		var sharedFiles = 0
		var processesPerSharedFile = 3
		/// The share of steps that add 1 to a shared counter (`count0…`) with a synced atomic update instead of writing.
		var incrementPercent = 0
		var counters = 2
		/// Machines log their values while they write too, not only after: needed for arrival times.
		var viewsWhileWriting = false

		var description: String {
			"seed \(seed), \(machines) machines × \(writes) writes every ~\(intervalMilliseconds) ms, "
				+ "\(sharedKeys) shared keys, \(removalPercent)% removals"
				+ (sharedFiles == 0 ? "" : ", \(sharedFiles) files shared by \(processesPerSharedFile) processes each")
				+ (incrementPercent == 0 ? "" : ", \(incrementPercent)% increments of \(counters) counters")
		}

		/// How many processes share a settings file with others.
		var sharingProcesses: Int { min(machines, sharedFiles * processesPerSharedFile) }

		/// The settings folder process `index` writes.
		func machine(of index: Int) -> Int {
			index < sharingProcesses ? index / processesPerSharedFile : index - sharingProcesses + sharedFiles
		}

		/// How many settings folders (machines) the processes write.
		var folders: Int { machines == 0 ? 0 : machine(of: machines - 1) + 1 }

		var counterNames: [String] { incrementPercent == 0 ? [] : (0..<max(1, counters)).map { "count\($0)" } }
	}

	let schedule: Schedule
	let prefix: String
	private let endpoints: [String]
	/// The control folder (logs, the stop file) and one config folder per machine.
	let folder: TemporaryDirectory
	private let configFolders: [TemporaryDirectory]
	private var processes: [ChildProcess?]
	private var incarnations: [Int]
	/// Exits of processes that are gone: killed ones and finished ones.
	private(set) var exits: [Int: [ChildProcess.Result]] = [:]

	/// Every name the machines sync.
	var names: [String] {
		(0..<schedule.machines).map { "own\($0)" } + (0..<schedule.sharedKeys).map { "shared\($0)" }
			+ schedule.counterNames
	}

	init(endpoints: [String], schedule: Schedule) throws {
		self.schedule = schedule
		self.endpoints = endpoints
		prefix = "/faults/\(UUID().uuidString.prefix(8))/"
		folder = try TemporaryDirectory()
		configFolders = try (0..<schedule.folders).map { _ in try TemporaryDirectory() }
		processes = Array(repeating: nil, count: schedule.machines)
		incarnations = Array(repeating: 0, count: schedule.machines)
		for index in 0..<schedule.machines {
			try launch(index)
		}
	}

	/// Starts machine `index` (again, on the same config folder: a restart after a crash).
	func launch(_ index: Int) throws {
		incarnations[index] += 1
		// Each machine prefers another member (its first endpoint), as a fleet behind a list of endpoints would
		// spread: a fault in any one member reaches some machines' watches.
		let first = Self.preferredMember(of: index, members: endpoints.count)
		let preferred = endpoints.indices.map { endpoints[($0 + first) % endpoints.count] }
		processes[index] = try ChildProcess(
			[
				"sync-machine", preferred.joined(separator: ","), prefix, "\(index)", "\(schedule.machines)",
				"\(incarnations[index])", "\(schedule.seed)",
				// A machine started again after a crash writes a few more: enough to show its writes still go out,
				// few enough that heal-to-convergence times measure sync rather than the schedule.
				"\(incarnations[index] == 1 ? schedule.writes : min(schedule.writes, 5))",
				"\(schedule.intervalMilliseconds)", "\(schedule.sharedKeys)", "\(schedule.removalPercent)",
				folder.url.path, "\(schedule.incrementPercent)", "\(schedule.counters)",
				schedule.viewsWhileWriting ? "1" : "0",
			], environment: configFolders[schedule.machine(of: index)].configEnvironment)
	}

	/// The member process `index` names first among its endpoints, and so watches and writes through while it answers
	/// and has a leader.
	static func preferredMember(of index: Int, members: Int) -> Int {
		index % members
	}

	/// `kill -9` of machine `index`.
	func kill(_ index: Int) async throws {
		guard let process = processes[index] else {
			return
		}
		processes[index] = nil
		process.kill(SIGKILL)
		exits[index, default: []].append(try await process.wait(timeout: 5))
	}

	/// Empties machine `index`'s settings file (the helper's standard store), keeping its sync state beside it.
	func emptySettingsFile(of index: Int) throws {
		try Data().write(to: configFolders[schedule.machine(of: index)].file("DefaultsTestHelper.plist"))
	}

	/// The values in machine `machine`'s settings file (every name the machines sync), as the logs write them:
	/// counters as numbers, and those at 0 or absent left out, as etcd holds nothing for them.
	func settingsFileValues(of machine: Int) -> [String: String]? {
		guard let data = try? Data(contentsOf: configFolders[machine].file("DefaultsTestHelper.plist")),
			let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
		else {
			return nil
		}
		var values: [String: String] = [:]
		for name in names {
			if let text = plist[name] as? String {
				values[name] = text
			} else if let number = plist[name] as? Int, number != 0 {
				values[name] = String(number)
			}
		}
		return values
	}

	/// Waits until the last increment of one of `processes` is on its way (logged as begun, not yet answered), at most
	/// `timeout` seconds: the moment to kill a process in the middle of a push. Returns that process, `nil` when none
	/// came.
	func waitUntilIncrementInFlight(anyOf processes: [Int], timeout: TimeInterval) async throws -> Int? {
		let deadline = Date().addingTimeInterval(timeout)
		while Date() < deadline {
			for index in processes where isIncrementInFlight(index) {
				return index
			}
			try await Task.sleep(for: .milliseconds(1))
		}
		return nil
	}

	private func isIncrementInFlight(_ index: Int) -> Bool {
		guard let handle = try? FileHandle(forReadingFrom: folder.file("log-\(index)")) else {
			return false
		}
		defer { try? handle.close() }
		let size = (try? handle.seekToEnd()) ?? 0
		try? handle.seek(toOffset: size > 4096 ? size - 4096 : 0)
		let tail = String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
		// Views may be logged after the `inc` line; what counts is the last line about a write.
		let last = tail.split(separator: "\n").last {
			$0.hasPrefix("inc") || $0.hasPrefix("try ") || $0.hasPrefix("ack ") || $0.hasPrefix("start ")
		}
		return last?.hasPrefix("inc ") == true
	}

	/// The processes that have not finished their schedule, or still have changes to push, described.
	var unfinished: [String] {
		logs.enumerated().compactMap { index, log in
			if !log.isDone {
				return "process \(index) not done"
			}
			if let pending = log.lastView?.pending, pending > 0 {
				return "process \(index) with \(pending) pending"
			}
			return nil
		}
	}

	/// Waits until machine `index` finished its schedule with nothing left to push, at most `timeout` seconds.
	func waitUntilIdle(_ index: Int, timeout: TimeInterval) async throws {
		let deadline = Date().addingTimeInterval(timeout)
		while Date() < deadline {
			let log = log(index)
			if log.isDone, log.lastView?.pending == 0 {
				return
			}
			try await Task.sleep(for: .milliseconds(50))
		}
		throw EtcdCluster.NotReady(description: "machine \(index) still had changes to push after \(timeout) s")
	}

	func log(_ index: Int) -> MachineLog {
		MachineLog(text: (try? String(contentsOf: folder.file("log-\(index)"), encoding: .utf8)) ?? "")
	}

	var logs: [MachineLog] {
		(0..<schedule.machines).map(log)
	}

	/// Waits, at most `timeout` seconds, until every machine finished its schedule, and etcd and every machine hold
	/// the same values with nothing pending, unchanged for `quiet` seconds. Returns whether that happened.
	func waitUntilConverged(
		on endpoint: [String], timeout: TimeInterval, quiet: TimeInterval = 0.5
	) async throws
		-> Bool
	{
		let deadline = Date().addingTimeInterval(timeout)
		var agreedSince: Date?
		var lastState: [String: String]?
		while Date() < deadline {
			let state = await EtcdGateway.state(anyOf: endpoints, prefix: prefix)?.values
			let logs = self.logs
			let isAgreed =
				state != nil
				&& logs.allSatisfy { log in log.isDone && log.lastView?.pending == 0 && log.lastView?.values == state }
			if isAgreed && state == lastState {
				if let since = agreedSince, Date().timeIntervalSince(since) >= quiet {
					return true
				}
				agreedSince = agreedSince ?? Date()
			} else {
				agreedSince = nil
			}
			lastState = state
			try await Task.sleep(for: .milliseconds(100))
		}
		return false
	}

	/// Tells every machine to log its final values and exit, and waits for them (at most 10 s each).
	func stop() async throws {
		_ = FileManager.default.createFile(atPath: folder.file("stop").path, contents: nil)
		for index in processes.indices {
			guard let process = processes[index] else {
				continue
			}
			processes[index] = nil
			exits[index, default: []].append(try await process.wait(timeout: 10))
		}
	}

	deinit {
		for process in processes.compactMap(\.self) {
			process.kill(SIGKILL)
			_ = try? process.wait(timeout: 5)
		}
	}
}
