import DefaultsTestSupport
import Foundation
import Testing

/// The randomized run for before a release (`.ci/faults`, see Docs/Sync.md): round after round of 20 processes and
/// two random faults, until `DEFAULTS_FAULTS_SECONDS` is spent. Off unless that variable is set. Six of the processes
/// are two machines of three processes sharing a settings file; one step in 20 of every process is a synced atomic
/// increment of one of two shared counters (with a fifth, tried first at load 30, processes were still in their
/// schedules 15 s after the heal: increments were cut by the stop in rounds without a kill).
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
		var tallies: [String: Tally] = [:]
		// A round takes about a minute at most; none starts that could not end in time.
		while Date().addingTimeInterval(60) < deadline {
			let schedule = MachineFleet.Schedule(
				seed: random.next() % 1_000_000, machines: machines, writes: 60, intervalMilliseconds: 80,
				sharedKeys: 5, removalPercent: 10, sharedFiles: machines >= 8 ? 2 : 0, processesPerSharedFile: 3,
				incrementPercent: 5, counters: 2, viewsWhileWriting: true)
			let chosen = (0..<2).map { _ in faults[Int(random.next() % UInt64(faults.count))] }
			let etcd = etcds[round % etcds.count]
			let version = EtcdServer.version(of: etcd) ?? etcd.path
			let run = FaultRun(
				etcd: etcd, schedule: schedule, faults: chosen, startDelay: 1.5,
				faultSeconds: 0.5 + Double(random.next() % 3000) / 1000)
			let outcome: FaultRun.Outcome
			do {
				outcome = try await run.run()
			} catch {
				Issue.record(error, "round \(round) of seed \(seed): \(chosen.map(\.rawValue)), \(schedule)")
				tallies[version, default: Tally()].add(round: round, schedule: schedule, error: "\(error)")
				round += 1
				continue
			}
			print("fault injection round \(round): \(outcome)")
			// Not failures here (CI's restart scenario fails them), but each one is worth reading.
			for echo in outcome.echoAttempts.prefix(3) {
				print("  echo: \(echo)")
			}
			if !outcome.failureReportSample.isEmpty,
				outcome.mostReportsOfOneProcess > max(1, chosen.filter(\.isRemoteOutage).count)
			{
				print("  reports of the machine with the most: \(outcome.failureReportSample)")
			}
			outcome.expectNoViolations("round \(round) of seed \(seed): ")
			tallies[version, default: Tally()].add(round: round, outcome: outcome)
			round += 1
		}
		#expect(round > 0, "DEFAULTS_FAULTS_SECONDS=\(seconds) leaves no time for a round (about a minute each)")
		for (version, tally) in tallies.sorted(by: { $0.key < $1.key }) {
			print("fault injection, etcd \(version), seed \(seed): \(tally)")
		}
		let all = tallies.values.reduce(into: Tally()) { $0.merge($1) }
		print("fault injection: \(round) rounds, seed \(seed): \(all)")
	}

	/// The figures of the rounds on one etcd version.
	struct Tally: CustomStringConvertible {
		var rounds = 0
		/// Rounds with a violation (or an error), with the round's schedule seed.
		var failedRounds: [String] = []
		var healTimes: [TimeInterval] = []
		var unconverged = 0
		/// The issue's measure: from etcd's commit to the last connected machine (see ``FaultRun/Outcome``).
		var slowestArrivalFromCommit: TimeInterval = 0
		var slowestArrivalFromCommitCountingAll: TimeInterval = 0
		/// Rounds whose slowest arrival from commit was over 5 s, with what made it.
		var arrivalsOverFiveSeconds: [String] = []
		/// The largest of the rounds' median upper bounds of the observer's lag, and of their largest lower bounds.
		var observerLag: FaultRun.ObserverLag?
		/// From the writer's attempt, which includes the wait for a quorum (see ``FaultRun/Outcome``).
		var slowestArrivalFromAttempt: TimeInterval = 0
		var slowestArrivalFromAttemptOutsideFaults: TimeInterval = 0
		/// The most reports one process made in a round, divided by the round's outages of the remote (its faults
		/// but machine kills and lost settings files, at least 1): the promise is one per process per outage, since
		/// each process (each incarnation of one) has an engine and a failure handler of its own.
		var mostReportsOfOneProcessPerOutage: Double = 0
		/// The same for one machine, all the processes sharing its settings file together: for information.
		var mostReportsPerOutage: Double = 0
		/// Rounds in which a process made more reports than the round had outages.
		var roundsOverOnePerProcessPerOutage = 0

		mutating func add(round: Int, outcome: FaultRun.Outcome) {
			rounds += 1
			if !outcome.violations.isEmpty {
				failedRounds.append("round \(round) (schedule seed \(outcome.schedule.seed))")
			}
			if let time = outcome.healToConvergence {
				healTimes.append(time)
			} else {
				unconverged += 1
			}
			slowestArrivalFromCommit = max(slowestArrivalFromCommit, outcome.slowestArrivalFromCommit ?? 0)
			slowestArrivalFromCommitCountingAll = max(
				slowestArrivalFromCommitCountingAll, outcome.slowestArrivalFromCommitCountingAll ?? 0)
			if let arrival = outcome.slowestArrivalFromCommit, arrival > 5 {
				arrivalsOverFiveSeconds.append(
					String(format: "round \(round) %.2f s: ", arrival) + outcome.slowestArrivalFromCommitDetail)
			}
			observerLag = FaultRun.ObserverLag.larger(observerLag, outcome.observerLag)
			slowestArrivalFromAttempt = max(slowestArrivalFromAttempt, outcome.slowestArrivalFromAttempt ?? 0)
			slowestArrivalFromAttemptOutsideFaults = max(
				slowestArrivalFromAttemptOutsideFaults, outcome.slowestArrivalFromAttemptOutsideFaults ?? 0)
			let outages = Double(max(1, outcome.faults.filter(\.isRemoteOutage).count))
			mostReportsPerOutage = max(mostReportsPerOutage, Double(outcome.failureReports.max() ?? 0) / outages)
			mostReportsOfOneProcessPerOutage = max(
				mostReportsOfOneProcessPerOutage, Double(outcome.mostReportsOfOneProcess) / outages)
			roundsOverOnePerProcessPerOutage += Double(outcome.mostReportsOfOneProcess) > outages ? 1 : 0
		}

		mutating func add(round: Int, schedule: MachineFleet.Schedule, error: String) {
			rounds += 1
			failedRounds.append("round \(round) (schedule seed \(schedule.seed)): \(error)")
		}

		mutating func merge(_ other: Tally) {
			rounds += other.rounds
			failedRounds += other.failedRounds
			healTimes += other.healTimes
			unconverged += other.unconverged
			slowestArrivalFromCommit = max(slowestArrivalFromCommit, other.slowestArrivalFromCommit)
			slowestArrivalFromCommitCountingAll = max(
				slowestArrivalFromCommitCountingAll, other.slowestArrivalFromCommitCountingAll)
			arrivalsOverFiveSeconds += other.arrivalsOverFiveSeconds
			observerLag = FaultRun.ObserverLag.larger(observerLag, other.observerLag)
			slowestArrivalFromAttempt = max(slowestArrivalFromAttempt, other.slowestArrivalFromAttempt)
			slowestArrivalFromAttemptOutsideFaults = max(
				slowestArrivalFromAttemptOutsideFaults, other.slowestArrivalFromAttemptOutsideFaults)
			mostReportsPerOutage = max(mostReportsPerOutage, other.mostReportsPerOutage)
			mostReportsOfOneProcessPerOutage = max(
				mostReportsOfOneProcessPerOutage, other.mostReportsOfOneProcessPerOutage)
			roundsOverOnePerProcessPerOutage += other.roundsOverOnePerProcessPerOutage
		}

		var description: String {
			let sorted = healTimes.sorted()
			let heal =
				sorted.isEmpty
				? "no heal converged"
				: String(format: "heal → convergence p50 %.2f s, max %.2f s", sorted[sorted.count / 2], sorted.last!)
			return "\(rounds) rounds, \(failedRounds.count) with violations \(failedRounds), \(heal)"
				+ (unconverged == 0 ? "" : " (\(unconverged) never converged)")
				+ String(format: ", slowest arrival from commit %.2f s", slowestArrivalFromCommit)
				+ String(format: " (%.2f s counting time not connected)", slowestArrivalFromCommitCountingAll)
				+ (observerLag.map { " (\($0), the largest of the rounds' figures)" } ?? "")
				+ (arrivalsOverFiveSeconds.isEmpty ? "" : " over 5 s in \(arrivalsOverFiveSeconds)")
				+ String(
					format: ", from attempt %.2f s (%.2f s of writes outside faults)", slowestArrivalFromAttempt,
					slowestArrivalFromAttemptOutsideFaults)
				+ String(
					format: ", failure reports: at most %.1f per process per outage (%.1f per machine), ",
					mostReportsOfOneProcessPerOutage, mostReportsPerOutage)
				+ "\(roundsOverOnePerProcessPerOutage) of \(rounds) rounds with a process over one per outage"
		}
	}
}
