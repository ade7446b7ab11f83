import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// The machines of a fault-injection run: `DefaultsTestHelper sync-machine` child processes, each with a config
/// folder of its own, writing a seeded schedule and logging it (see `SyncMachineCommand.swift` in the helper).
///
/// ```swift
/// let fleet = try MachineFleet(endpoints: cluster.endpoints, schedule: .init(seed: 7))
/// try fleet.kill(2); try fleet.launch(2)
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

		var description: String {
			"seed \(seed), \(machines) machines × \(writes) writes every ~\(intervalMilliseconds) ms, "
				+ "\(sharedKeys) shared keys, \(removalPercent)% removals"
		}
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
	}

	init(endpoints: [String], schedule: Schedule) throws {
		self.schedule = schedule
		self.endpoints = endpoints
		prefix = "/faults/\(UUID().uuidString.prefix(8))/"
		folder = try TemporaryDirectory()
		configFolders = try (0..<schedule.machines).map { _ in try TemporaryDirectory() }
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
		let preferred = endpoints.indices.map { endpoints[($0 + index) % endpoints.count] }
		processes[index] = try ChildProcess(
			[
				"sync-machine", preferred.joined(separator: ","), prefix, "\(index)", "\(schedule.machines)",
				"\(incarnations[index])", "\(schedule.seed)",
				// A machine started again after a crash writes a few more: enough to show its writes still go out,
				// few enough that heal-to-convergence times measure sync rather than the schedule.
				"\(incarnations[index] == 1 ? schedule.writes : min(schedule.writes, 5))",
				"\(schedule.intervalMilliseconds)", "\(schedule.sharedKeys)", "\(schedule.removalPercent)",
				folder.url.path,
			], environment: configFolders[index].configEnvironment)
	}

	/// `kill -9` of machine `index`.
	func kill(_ index: Int) throws {
		guard let process = processes[index] else {
			return
		}
		processes[index] = nil
		process.kill(SIGKILL)
		exits[index, default: []].append(try process.wait(timeout: 5))
	}

	/// Empties machine `index`'s settings file (the helper's standard store), keeping its sync state beside it.
	func emptySettingsFile(of index: Int) throws {
		try Data().write(to: configFolders[index].file("DefaultsTestHelper.plist"))
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
			let state = EtcdGateway.state(anyOf: endpoints, prefix: prefix)?.values
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
	func stop() throws {
		_ = FileManager.default.createFile(atPath: folder.file("stop").path, contents: nil)
		for index in processes.indices {
			guard let process = processes[index] else {
				continue
			}
			processes[index] = nil
			exits[index, default: []].append(try process.wait(timeout: 10))
		}
	}

	deinit {
		for process in processes.compactMap(\.self) {
			process.kill(SIGKILL)
			_ = try? process.wait(timeout: 5)
		}
	}
}
