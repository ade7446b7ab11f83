import Foundation
import Testing

/// Atomic updates under faults (issue 22): five machines (child processes, `DefaultsTestHelper sync-increment`) add 1
/// to one synced counter 200 times each through a 3-member etcd cluster whose leader is killed (`kill -9`) in the
/// middle and restarted on its data 1.5 s later. Each update is a compare-and-swap loop; one whose commit's answer
/// the kill cut off is recognised by its mark, so none counts twice and none is lost.
///
/// In the fault-injection suite itself (an extension of it), so that it runs serialized with the other scenarios: two
/// clusters and ten machines at once are more than two cores take (members then fail to elect a leader in time).
extension FaultInjectionTests {
	enum AtomicCounter {
		static let machines = 5
		static let increments = 200
	}

	/// How long the counter may stand still before the scenario fails: the machines keep going as long as one of them
	/// adds to it, however loaded the machine is (at load 8 they made 124 to 145 increments each in 45 s), and stop
	/// when none did for this long, which covers the kill, the 1.5 s down and an election many times over.
	static let atomicCounterStall: Duration = .seconds(20).scaledForSanitizer

	// The time limit is a backstop for a hang of the test itself; a stalled counter fails it after
	// `atomicCounterStall`, and 1,000 increments take about a minute at load 8.
	@Test(.scaledTimeLimit(minutes: 4), arguments: FaultInjectionTests.etcds)
	func machinesIncrementingOneCounterWhileTheLeaderIsKilledEndOnTheExactTotal(etcd: URL) async throws {
		let cluster = try await EtcdCluster.start(etcd: etcd)
		defer { cluster.stop() }
		let prefix = "/faults/counter-\(UUID().uuidString.prefix(8))/"
		let endpoints = cluster.endpoints
		let folders = try (0..<AtomicCounter.machines).map { _ in try TemporaryDirectory() }
		// The machines keep no clock: they stop early only when the wait below creates this file.
		let giveUp = folders[0].file("give-up")
		let processes = try (0..<AtomicCounter.machines).map { index in
			// Each machine prefers another member, so that the kill cuts off some machines' requests in flight.
			let preferred = endpoints.indices.map { endpoints[($0 + index) % endpoints.count] }
			return try ChildProcess(
				[
					"sync-increment", preferred.joined(separator: ","), prefix, "count", "\(AtomicCounter.increments)",
					giveUp.path,
				], environment: folders[index].configEnvironment)
		}
		defer {
			for process in processes {
				process.stopIfRunning()
			}
		}

		// In the middle: once a fifth of the increments are in, however long the machines take to get there (the
		// test's time limit bounds it). A kill after a time instead came after the machines had finished under load.
		let total = AtomicCounter.machines * AtomicCounter.increments
		let atKill = try await Self.waitForAtomicCounter(
			atLeast: total / 5, anyOf: endpoints, prefix: prefix, while: { processes.contains(where: \.isRunning) })
		let leader = try await Fault.waitForLeader(cluster)
		cluster.kill(leader)
		try await Task.sleep(for: .seconds(1.5))
		try await cluster.restart(leader)

		let (results, stalledAt) = try await Self.waitForIncrementingMachines(
			processes, anyOf: endpoints, prefix: prefix, stall: Self.atomicCounterStall, giveUp: giveUp)
		if let stalledAt {
			Issue.record(
				"no machine made an increment for \(Self.atomicCounterStall); the counter stood at \(stalledAt)")
		}
		var reports: [String] = []
		for result in results {
			#expect(result.status == 0, "\(result)")
			#expect(result.standardOutput.hasPrefix("incremented \(AtomicCounter.increments) "), "\(result)")
			reports.append(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
		}
		let final = await Self.atomicCounter(anyOf: endpoints, prefix: prefix)
		print(
			"atomic updates under a leader kill: \(atKill) at the kill, \(final.map(String.init) ?? "-") at the end; \(reports)"
		)
		#expect(atKill < total, "the kill came after the machines had finished")
		#expect(final == total)
	}

	/// A stalled counter fails the scenario: machines that can reach no member make no increment, and the wait
	/// tells them to give up once the counter stood still for the stall, instead of waiting for them to finish.
	@Test(.scaledTimeLimit(minutes: 1))
	func theWaitForTheMachinesEndsWhenNoMachineMakesAnIncrement() async throws {
		let folder = try TemporaryDirectory()
		let giveUp = folder.file("give-up")
		let unreachable = "http://127.0.0.1:9"
		let machine = try ChildProcess(
			["sync-increment", unreachable, "/faults/stalled/", "count", "1", giveUp.path],
			environment: folder.configEnvironment)
		defer { machine.stopIfRunning() }
		let started = ContinuousClock.now
		let (results, stalledAt) = try await Self.waitForIncrementingMachines(
			[machine], anyOf: [unreachable], prefix: "/faults/stalled/", stall: .seconds(2), giveUp: giveUp)
		#expect(stalledAt != nil)
		#expect(results.map(\.status) == [1], "\(results)")
		#expect(results.first?.standardOutput.hasPrefix("gave up after 0 of 1") == true, "\(results)")
		#expect(ContinuousClock.now - started < .seconds(30))
	}

	/// Waits for the incrementing machines to end as long as the counter moves. Once no machine made an increment
	/// for `stall` (the counter, read from etcd, stood still or could not be read), it creates `giveUp`, on which
	/// every machine stops and says how far it got, and returns the value the counter stood at as `stalledAt`.
	static func waitForIncrementingMachines(
		_ processes: [ChildProcess], anyOf endpoints: [String], prefix: String, stall: Duration, giveUp: URL
	) async throws -> (results: [ChildProcess.Result], stalledAt: Int?) {
		var last: Int?
		var lastMove = ContinuousClock.now
		var stalledAt: Int?
		while processes.contains(where: \.isRunning) {
			if let value = await atomicCounter(anyOf: endpoints, prefix: prefix), value != last {
				last = value
				lastMove = .now
			}
			if ContinuousClock.now - lastMove > stall {
				stalledAt = last ?? 0
				_ = FileManager.default.createFile(atPath: giveUp.path, contents: nil)
				break
			}
			try await Task.sleep(for: .milliseconds(200))
		}
		var results: [ChildProcess.Result] = []
		for process in processes {
			// Done, or told to give up: each ends at its next update, and one update is bounded by the requests'
			// time-out (2 s) and the engine's retries.
			results.append(try await process.wait(timeout: TimeInterval(30 * sanitizerSlowdown)))
		}
		return (results, stalledAt)
	}

	/// The kill waits for a count, never for a time, so a counter that cannot be read must fail the scenario at once
	/// (it was taken for 0, and the kill came after 20 s whatever the count).
	@Test(.scaledTimeLimit(minutes: 1))
	func theWaitForTheCounterFailsAtOnceWhenNoMemberAnswers() async throws {
		// Asked after each read that found the counter short: a read that fails must throw before that. Three polls
		// end the wait either way, with the same error, which only this count tells apart.
		let polls = Tally()
		await #expect(throws: EtcdCluster.NotReady.self) {
			try await Self.waitForAtomicCounter(
				atLeast: 1, anyOf: ["http://127.0.0.1:9"], prefix: "/faults/unread/",
				while: {
					polls.add()
					return polls.count < 3
				})
		}
		#expect(polls.count == 0, "the failed read was taken for a counter short of its goal")
	}

	/// Polls the counter until it reaches `count` and returns the value read. Throws at once when no member answers
	/// the read, or when `isGoingOn` says the counter can no longer get there (its machines have all exited).
	static func waitForAtomicCounter(
		atLeast count: Int, anyOf endpoints: [String], prefix: String, while isGoingOn: () -> Bool
	) async throws -> Int {
		while true {
			guard let value = await atomicCounter(anyOf: endpoints, prefix: prefix) else {
				throw EtcdCluster.NotReady(description: "no member answered a read of the counter")
			}
			if value >= count {
				return value
			}
			guard isGoingOn() else {
				throw EtcdCluster.NotReady(description: "the counter stopped at \(value), short of \(count)")
			}
			try await Task.sleep(for: .milliseconds(20))
		}
	}

	/// The counter's value in etcd, read with `curl` (independently of `DefaultsEtcd`); `nil` when no member answers.
	static func atomicCounter(anyOf endpoints: [String], prefix: String) async -> Int? {
		let key = prefix + "count"
		for endpoint in endpoints {
			// An answer without a header is an error (a member without a leader): the next member may know.
			guard let answer = await EtcdGateway.call(endpoint, "/v3/kv/range", ["key": EtcdGateway.base64(key)]),
				answer["header"] != nil
			else {
				continue
			}
			let value = ((answer["kvs"] as? [[String: Any]])?.first?["value"] as? String).flatMap {
				Data(base64Encoded: $0)
			}
			guard let value else {
				return 0
			}
			let wrapper = try? PropertyListSerialization.propertyList(from: value, format: nil) as? [String: Any]
			return (wrapper?["value"] as? NSNumber)?.intValue
		}
		return nil
	}
}
