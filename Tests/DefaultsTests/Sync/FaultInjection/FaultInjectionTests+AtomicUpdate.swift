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

		// In the middle: once a fifth of the increments are in.
		let total = AtomicCounter.machines * AtomicCounter.increments
		let deadline = Date().addingTimeInterval(20)
		while (Self.atomicCounter(anyOf: endpoints, prefix: prefix) ?? 0) < total / 5, Date() < deadline {
			try await Task.sleep(for: .milliseconds(20))
		}
		let leader = try await Fault.waitForLeader(cluster)
		let atKill = Self.atomicCounter(anyOf: endpoints, prefix: prefix) ?? 0
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
