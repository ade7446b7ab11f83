import DefaultsTestSupport
import Foundation
import Testing

/// The randomized run for before a release (`.ci/faults`, see Docs/Sync.md): round after round of 20 machines and
/// two random faults, until `DEFAULTS_FAULTS_SECONDS` is spent. Off unless that variable is set.
///
/// `DEFAULTS_FAULTS_SEED` fixes the seed (printed first, so that a failing run can be repeated);
/// `DEFAULTS_FAULTS_MACHINES` changes the number of machines; `DEFAULTS_FAULTS_SKIP` names faults to leave out
/// (comma-separated, such as `memberCutOff`).
@Suite(.serialized, .requiresEtcd) struct FaultInjectionLongRunTests {
	static let environment = ProcessInfo.processInfo.environment
	static let seconds = environment["DEFAULTS_FAULTS_SECONDS"].flatMap(Double.init)

	@Test(
		.enabled(if: seconds != nil, "the randomized fault run is for before a release: .ci/faults"),
		.scaledTimeLimit(minutes: 120))
	func randomizedFaultsLoseNothing() async throws {
		let seconds = try #require(Self.seconds)
		let seed = Self.environment["DEFAULTS_FAULTS_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...999_999)
		let machines = Self.environment["DEFAULTS_FAULTS_MACHINES"].flatMap(Int.init) ?? 20
		let skipped = Set((Self.environment["DEFAULTS_FAULTS_SKIP"] ?? "").split(separator: ",").map(String.init))
		let faults = Fault.allCases.filter {
			!skipped.contains($0.rawValue) && (!$0.needsIsolatedNetwork || IsolatedNetwork.isAvailable)
		}
		let etcds = EtcdServer.executables()
		print("fault injection: seed \(seed) (DEFAULTS_FAULTS_SEED=\(seed) repeats this run), \(seconds) s")
		try #require(!etcds.isEmpty && !faults.isEmpty)

		var random = SeededRandom(seed: seed)
		let deadline = Date().addingTimeInterval(seconds)
		var round = 0
		var healTimes: [TimeInterval] = []
		// A round takes about a minute at most; none starts that could not end in time.
		while Date().addingTimeInterval(60) < deadline {
			let schedule = MachineFleet.Schedule(
				seed: random.next() % 1_000_000, machines: machines, writes: 60, intervalMilliseconds: 80,
				sharedKeys: 5, removalPercent: 10)
			let chosen = (0..<2).map { _ in faults[Int(random.next() % UInt64(faults.count))] }
			let run = FaultRun(
				etcd: etcds[round % etcds.count], schedule: schedule, faults: chosen, startDelay: 1.5,
				faultSeconds: 0.5 + Double(random.next() % 3000) / 1000)
			let outcome: FaultRun.Outcome
			do {
				outcome = try await run.run()
			} catch {
				Issue.record(error, "round \(round) of seed \(seed): \(chosen.map(\.rawValue)), \(schedule)")
				round += 1
				continue
			}
			print("fault injection round \(round): \(outcome)")
			// Not failures here (CI's restart scenario fails them), but each one is worth reading.
			for echo in outcome.echoAttempts.prefix(3) {
				print("  echo: \(echo)")
			}
			outcome.expectNoViolations("round \(round) of seed \(seed): ")
			if let time = outcome.healToConvergence {
				healTimes.append(time)
			}
			round += 1
		}
		#expect(round > 0, "DEFAULTS_FAULTS_SECONDS=\(seconds) leaves no time for a round (about a minute each)")
		let sorted = healTimes.sorted()
		if !sorted.isEmpty {
			print(
				"fault injection: \(round) rounds, heal → convergence p50 \(sorted[sorted.count / 2]) s, "
					+ "max \(sorted.last!) s")
		}
	}
}
