import Foundation
import Testing

/// The checker itself, on made-up histories and logs: each rule it enforces fails when broken, so a green fault run
/// means something.
@Suite struct FaultCheckerTests {
	typealias Event = EtcdHistory.Event

	/// Machine 0 wrote `own0` twice and `shared0` once; machine 1 wrote `shared0` once, last.
	static let logs = [
		MachineLog(
			text: """
				start 1
				try own0 m0.1.0
				ack own0 m0.1.0
				try shared0 m0.1.1
				ack shared0 m0.1.1
				try own0 m0.1.2
				ack own0 m0.1.2
				done
				view 1000 0 own0=m0.1.2,own1=-,shared0=m1.1.0
				final own0=m0.1.2,own1=-,shared0=m1.1.0
				"""),
		MachineLog(
			text: """
				start 1
				try shared0 m1.1.0
				ack shared0 m1.1.0
				done
				view 1000 0 own0=m0.1.2,own1=-,shared0=m1.1.0
				final own0=m0.1.2,own1=-,shared0=m1.1.0
				"""),
	]

	static let history = [
		Event(revision: 2, name: "own0", value: "m0.1.0"),
		Event(revision: 3, name: "shared0", value: "m0.1.1"),
		Event(revision: 4, name: "own0", value: "m0.1.2"),
		Event(revision: 5, name: "shared0", value: "m1.1.0"),
	]

	static let finalState = ["own0": "m0.1.2", "shared0": "m1.1.0"]

	func violations(
		history: [Event] = history, finalState: [String: String] = finalState, logs: [MachineLog] = logs
	)
		-> [String]
	{
		FaultChecker(
			history: EtcdHistory(events: history), finalState: finalState, logs: logs, sharedNames: ["shared0"]
		).violations
	}

	@Test func aCleanRunHasNoViolations() {
		#expect(violations() == [])
	}

	@Test func aLostAcknowledgedWriteIsFound() {
		let history = Array(Self.history.filter { $0.revision != 4 })
		let found = violations(history: history, finalState: ["own0": "m0.1.0", "shared0": "m1.1.0"])
		#expect(found.contains { $0.contains("machine 0's own key ended on m0.1.0") }, "\(found)")
	}

	@Test func anEchoPushIsFound() {
		let history = Self.history + [Event(revision: 6, name: "shared0", value: "m0.1.1")]
		let found = violations(history: history, finalState: ["own0": "m0.1.2", "shared0": "m0.1.1"])
		#expect(found.contains { $0.contains("the same value stored more than once") }, "\(found)")
	}

	@Test func aMachineThatDidNotConvergeIsFound() {
		var logs = Self.logs
		logs[1] = MachineLog(text: "start 1\ndone\nfinal own0=m0.1.0,shared0=m1.1.0\n")
		let found = violations(logs: logs)
		#expect(found.contains { $0.hasPrefix("machine 1 ended on") }, "\(found)")
	}

	@Test func aSharedKeyThatDoesNotEndOnTheRulesValueIsFound() {
		let found = violations(finalState: ["own0": "m0.1.2", "shared0": "m0.1.1"])
		#expect(found.contains { $0.hasPrefix("shared0 ended on m0.1.1, the rule picks m1.1.0") }, "\(found)")
	}

	@Test func anOwnKeyGoingBackToAnOlderValueIsFound() {
		let history = Self.history + [Event(revision: 6, name: "own0", value: "m0.1.0")]
		let found = violations(history: history, finalState: ["own0": "m0.1.0", "shared0": "m1.1.0"])
		#expect(found.contains { $0.contains("went back to an older value") }, "\(found)")
	}

	@Test func aLogLineOfEachKindIsRead() {
		let log = Self.logs[0]
		#expect(log.lines.first == .start(incarnation: 1))
		#expect(log.lines.contains(.attempt(name: "own0", value: "m0.1.2")))
		#expect(log.lines.contains(.acknowledged(name: "own0", value: "m0.1.2")))
		#expect(log.isDone)
		#expect(log.lastView?.pending == 0)
		#expect(log.finalValues == Self.finalState)
	}

	@Test func aConflictReportedForAValueTheMachineNeverWroteIsAnEcho() {
		let reports = [
			"Defaults: A local change lost a sync conflict: 'shared0': the local value m0.1.1 lost to the remote value "
				+ "m1.1.0 (revision 5). Another machine's change reached the remote first\n",
			"Defaults: A local change lost a sync conflict: 'own0': the local value m0.1.2 lost to the remote value "
				+ "(removed) (revision 0). Another machine's change reached the remote first\n",
		]
		let echoes = FaultChecker.echoAttempts(logs: Self.logs, reports: reports)
		#expect(echoes.count == 1, "\(echoes)")
		#expect(
			echoes.first?.hasPrefix("machine 1 (started 1 times) reports its change own0=m0.1.2 lost") == true,
			"\(echoes)")
	}

	/// Two processes sharing a settings file (logs 0 and 1, machine 0) and one alone (log 2, machine 1), each adding 1
	/// to `count0`; process 1 was killed while its second increment was on its way, and it committed.
	static let counterLogs = [
		MachineLog(text: "start 1\ninc count0\nincok count0 1\ndone\nview 1 0 count0=3\nfinal count0=3\n"),
		MachineLog(text: "start 1\ninc count0\nincok count0 2\ninc count0\nstart 2\ndone\nfinal count0=3\n"),
		MachineLog(text: "start 1\ninc count0\nincfail count0 unreachable\ndone\nfinal count0=3\n"),
	]

	static let counterHistory = (1...3).map { Event(revision: Int64($0 + 1), name: "count0", value: "\($0)") }

	func counterViolations(
		history: [Event] = counterHistory, finalState: [String: String] = ["count0": "3"],
		logs: [MachineLog] = counterLogs, files: [[String: String]?] = [["count0": "3"], ["count0": "3"]]
	) -> [String] {
		FaultChecker(
			history: EtcdHistory(events: history), finalState: finalState, logs: logs, sharedNames: [],
			counterNames: ["count0"], settingsFiles: files
		).violations.filter { !$0.contains("own key") }
	}

	@Test func incrementsCountedOnceWithAKillMidPushHaveNoViolations() {
		#expect(counterViolations() == [])
		#expect(Self.counterLogs[1].incrementsCutByAKill == 1)
		#expect(Self.counterLogs[2].failedIncrements == ["unreachable"])
	}

	@Test func aCounterGoingBackIsFound() {
		let history = Self.counterHistory + [Event(revision: 5, name: "count0", value: "2")]
		let found = counterViolations(history: history, finalState: ["count0": "2"])
		#expect(found.contains { $0.hasPrefix("count0 went from 3 to @5 count0=2") }, "\(found)")
	}

	@Test func anIncrementCountedTwiceOrNotAtAllIsFound() {
		var logs = Self.counterLogs
		logs[2] = MachineLog(text: "start 1\ninc count0\nincok count0 2\ndone\nfinal count0=3\n")
		#expect(counterViolations(logs: logs).contains { $0.contains("same value: [2]") })
		let lost = Array(Self.counterHistory.prefix(1))
		let found = counterViolations(history: lost, finalState: ["count0": "1"])
		#expect(found.contains { $0.contains("values etcd never stored: [2]") }, "\(found)")
		#expect(found.contains { $0.contains("ended on 1 after 2 acknowledged") }, "\(found)")
	}

	@Test func aSettingsFileNotOnEtcdsValuesIsFound() {
		let found = counterViolations(files: [["count0": "3"], ["count0": "2"]])
		#expect(found.contains { $0.hasPrefix("machine 1's settings file ended on") }, "\(found)")
	}

	@Test func aConflictReportedForAValueAnotherProcessOfTheSameFileWroteIsNoEcho() {
		let report =
			"Defaults: A local change lost a sync conflict: 'shared0': the local value m0.1.1 lost to the remote value "
			+ "m1.1.0 (revision 5).\n"
		// Process 1 reports process 0's write: an edit of its machine when they share a file, an echo otherwise.
		#expect(FaultChecker.echoAttempts(logs: Self.logs, reports: ["", report], machines: [0, 0]).isEmpty)
		#expect(FaultChecker.echoAttempts(logs: Self.logs, reports: ["", report]).count == 1)
	}
}

/// How a run's heal-to-convergence time is taken from the machines' logs.
@Suite struct HealToConvergenceTests {
	/// Healed at 1 s; the last views at 1.3 s and 1.4 s.
	@Test func aRunWhoseWritesEndedBeforeTheHealIsTimedFromTheHeal() {
		let logs = [
			MachineLog(text: "start 1\ntry own0 m0.1.0 500\ndone\nview 1300 0 own0=m0.1.0\n"),
			MachineLog(text: "start 1\ninc count0 600\nincok count0 1\ndone\nview 1400 0 own0=m0.1.0,count0=1\n"),
		]
		let time = FaultRun.healToConvergence(healed: Date(timeIntervalSince1970: 1), logs: logs)
		#expect(abs(time - 0.4) < 0.001, "\(time)")
	}

	/// Writes go on after the heal (a schedule longer than the faults, a machine started again): convergence cannot
	/// come before the last of them, so the time is taken from it, not from the heal (which counted the rest of the
	/// schedule as sync's delay). An increment begun last counts as a write too.
	@Test func writesAfterTheHealMoveTheStartToTheLastOfThem() {
		let logs = [
			MachineLog(text: "start 1\ntry own0 m0.1.0 4000\ndone\nview 4600 0 own0=m0.1.0\n"),
			MachineLog(text: "start 1\ninc count0 5000\nincok count0 1\ndone\nview 5300 0 own0=m0.1.0,count0=1\n"),
		]
		let time = FaultRun.healToConvergence(healed: Date(timeIntervalSince1970: 1), logs: logs)
		#expect(abs(time - 0.3) < 0.001, "\(time)")
	}
}

/// How failure reports are counted against the promise: at most one per process per outage of the remote.
@Suite struct FailureReportCountTests {
	static let outage = "Defaults: Syncing '/faults/' stopped: the remote cannot be reached."

	/// A process killed and started again is two processes, each with its engine and its report of an outage.
	@Test func eachIncarnationOfAProcessCountsApart() {
		let counts = FaultRun.failureReports(
			standardErrors: [[Self.outage + "\n", Self.outage + "\n"], []], machines: [0, 0], folders: 1)
		#expect(counts.mostOfOneProcess == 1)
		#expect(counts.machines.map(\.count) == [2])
	}

	/// The keys of a lost settings file put back are reported (the fault's own report), which is no report of an
	/// outage: with a leader kill in the round, the process that reported both made one outage report (seed 126493
	/// counted two). In a round without a lost file, the same report counts: nothing should have put keys back.
	@Test func aLostSettingsFilesPutBackIsNoOutageReport() {
		let putBack =
			"Defaults: The synced keys own1 of '/faults/' \(FaultRun.putBackReport) (an editor, a restored or lost file)"
		let standardErrors = [[Self.outage + "\n" + putBack + "\n"]]
		let lost = FaultRun.failureReports(
			standardErrors: standardErrors, machines: [0], folders: 1, settingsFileLost: true)
		#expect(lost.mostOfOneProcess == 1)
		let notLost = FaultRun.failureReports(standardErrors: standardErrors, machines: [0], folders: 1)
		#expect(notLost.mostOfOneProcess == 2)
	}

	/// A killed machine is no outage of the remote: two reports of one process in a round of a machine kill and a
	/// leader kill are two for one outage.
	@Test func aMachineKillIsNoOutage() {
		var outcome = FaultRun.Outcome(
			faults: [.machineKill, .leaderKill], schedule: .init(seed: 1), etcd: URL(filePath: "/etcd"), violations: [],
			echoAttempts: [], healToConvergence: 1, revisions: 1)
		outcome.failureReports = [2]
		outcome.mostReportsOfOneProcess = 2
		var tally = FaultInjectionLongRunTests.Tally()
		tally.add(round: 0, outcome: outcome)
		#expect(tally.mostReportsOfOneProcessPerOutage == 2)
		#expect(tally.roundsOverOnePerProcessPerOutage == 1)
	}
}

/// How a run's arrival times are taken: from etcd's commit (the promise) and from the writer's attempt.
@Suite struct ArrivalTimeTests {
	/// Process 0 writes at 1 s while etcd has no quorum; etcd commits it (revision 7) at 4 s; process 1 holds it at
	/// 4.3 s. Delivery took 0.3 s: the 3 s before the commit were the outage, which only the attempt's figure counts.
	static let history = EtcdHistory(events: [.init(revision: 7, name: "own0", value: "m0.1.0")])
	static let logs = [
		MachineLog(text: "start 1\ntry own0 m0.1.0 1000\nack own0 m0.1.0\nview 1010 1 own0=m0.1.0\n"),
		MachineLog(text: "start 1\nview 900 0 own0=-\nview 4300 0 own0=m0.1.0\n"),
	]

	@Test func arrivalIsTimedFromTheCommitNotTheAttempt() throws {
		let arrival = FaultRun.arrivalsFromCommit(
			history: Self.history, commits: [7: 4000], logs: Self.logs, machines: [0, 1], disconnected: [[], []])
		let slowest = try #require(arrival.slowest)
		#expect(slowest.milliseconds == 300 && slowest.process == 1 && slowest.writer == 0 && arrival.unseen == 0)
		let fromAttempt = FaultRun.slowestArrivalsFromAttempt(
			history: Self.history, logs: Self.logs, machines: [0, 1], faults: [])
		#expect(fromAttempt.all.map { abs($0 - 3.3) < 0.001 } == true, "\(String(describing: fromAttempt.all))")
	}

	/// Process 1 was not connected from 4.1 s to 4.2 s (its member paused, say): that 0.1 s is not counted.
	@Test func timeNotConnectedIsNotCounted() throws {
		let arrival = FaultRun.arrivalsFromCommit(
			history: Self.history, commits: [7: 4000], logs: Self.logs, machines: [0, 1],
			disconnected: [[], [3000...3500, 4100...4200]])
		let slowest = try #require(arrival.slowest)
		#expect(slowest.milliseconds == 200 && slowest.disconnected == 100)
		#expect(arrival.slowestCountingAll == 300)
	}

	/// A machine sharing the writer's file holds the value through the file: it is no arrival; a revision the observer
	/// never saw is counted as unseen rather than timed.
	@Test func sharingMachinesAndUnseenCommitsAreNotTimed() {
		let shared = FaultRun.arrivalsFromCommit(
			history: Self.history, commits: [7: 4000], logs: Self.logs, machines: [0, 0], disconnected: [[], []])
		#expect(shared.slowest == nil)
		let unseen = FaultRun.arrivalsFromCommit(
			history: Self.history, commits: [:], logs: Self.logs, machines: [0, 1], disconnected: [[], []])
		#expect(unseen.slowest == nil && unseen.unseen == 1)
	}

	/// An increment begun at 1 s and answered at 1.1 s was committed in between: seen at 1.05 s, the observer's lag
	/// is at most 50 ms and at least -50 ms. Its value counts as a written value too, its writer the `incok` line's.
	@Test func incrementsBoundTheObserversLag() throws {
		let history = EtcdHistory(events: [.init(revision: 3, name: "count0", value: "1")])
		let logs = [
			MachineLog(text: "start 1\ninc count0 1000\nincok count0 1 1100\nview 1100 0 count0=1\n"),
			MachineLog(text: "start 1\nview 1400 0 count0=1\n"),
		]
		let lag = try #require(FaultRun.observerLag(history: history, commits: [3: 1050], logs: logs))
		#expect(abs(lag.medianAtMost - 0.05) < 0.001 && abs(lag.largestAtLeast + 0.05) < 0.001, "\(lag)")
		#expect(abs(lag.medianAtLeast + 0.05) < 0.001)
		let arrival = FaultRun.arrivalsFromCommit(
			history: history, commits: [3: 1050], logs: logs, machines: [0, 1], disconnected: [[], []])
		#expect(arrival.slowest?.milliseconds == 350 && arrival.slowest?.writer == 0)
		// The older `incok` line without a time still parses, and bounds nothing.
		#expect(MachineLog(text: "start 1\ninc count0 1000\nincok count0 1\n").incremented.count == 1)
		#expect(MachineLog(text: "start 1\ninc count0 1000\nincok count0 1\n").incrementMilliseconds.isEmpty)
	}
}
