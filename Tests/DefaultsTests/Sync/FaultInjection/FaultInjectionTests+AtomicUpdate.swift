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

	@Test(.scaledTimeLimit(minutes: 1), arguments: FaultInjectionTests.etcds)
	func machinesIncrementingOneCounterWhileTheLeaderIsKilledEndOnTheExactTotal(etcd: URL) async throws {
		let cluster = try await EtcdCluster.start(etcd: etcd)
		defer { cluster.stop() }
		let prefix = "/faults/counter-\(UUID().uuidString.prefix(8))/"
		let endpoints = cluster.endpoints
		let folders = try (0..<AtomicCounter.machines).map { _ in try TemporaryDirectory() }
		let processes = try (0..<AtomicCounter.machines).map { index in
			// Each machine prefers another member, so that the kill cuts off some machines' requests in flight.
			let preferred = endpoints.indices.map { endpoints[($0 + index) % endpoints.count] }
			return try ChildProcess(
				[
					"sync-increment", preferred.joined(separator: ","), prefix, "count", "\(AtomicCounter.increments)",
					"45",
				], environment: folders[index].configEnvironment)
		}
		defer {
			for process in processes where process.isRunning {
				process.kill()
				_ = try? process.wait(timeout: 5)
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

		var reports: [String] = []
		for process in processes {
			let result = try await process.wait(timeout: 50)
			#expect(result.status == 0, "\(result)")
			#expect(result.standardOutput.hasPrefix("incremented \(AtomicCounter.increments) "), "\(result)")
			reports.append(result.standardOutput.trimmingCharacters(in: .whitespacesAndNewlines))
		}
		let final = Self.atomicCounter(anyOf: endpoints, prefix: prefix)
		print(
			"atomic updates under a leader kill: \(atKill) at the kill, \(final.map(String.init) ?? "-") at the end; \(reports)"
		)
		#expect(atKill < total, "the kill came after the machines had finished")
		#expect(final == total)
	}

	/// The kill waits for a count, never for a time, so a counter that cannot be read must fail the scenario at once
	/// (it was taken for 0, and the kill came after 20 s whatever the count).
	@Test(.scaledTimeLimit(minutes: 1))
	func theWaitForTheCounterFailsAtOnceWhenNoMemberAnswers() async throws {
		let started = ContinuousClock.now
		await #expect(throws: EtcdCluster.NotReady.self) {
			try await Self.waitForAtomicCounter(
				atLeast: 1, anyOf: ["http://127.0.0.1:9"], prefix: "/faults/unread/", while: { true })
		}
		#expect(ContinuousClock.now - started < .seconds(5))
	}

	/// Polls the counter until it reaches `count` and returns the value read. Throws at once when no member answers
	/// the read, or when `isGoingOn` says the counter can no longer get there (its machines have all exited).
	static func waitForAtomicCounter(
		atLeast count: Int, anyOf endpoints: [String], prefix: String, while isGoingOn: () -> Bool
	) async throws -> Int {
		while true {
			guard let value = atomicCounter(anyOf: endpoints, prefix: prefix) else {
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
	static func atomicCounter(anyOf endpoints: [String], prefix: String) -> Int? {
		let key = prefix + "count"
		for endpoint in endpoints {
			// An answer without a header is an error (a member without a leader): the next member may know.
			guard let answer = EtcdGateway.call(endpoint, "/v3/kv/range", ["key": EtcdGateway.base64(key)]),
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
