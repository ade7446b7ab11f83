import Foundation
import Testing

/// Machines of several processes sharing one settings file under faults (issue 28): one machine of three processes on
/// one file and one prefix beside three machines of one process each, all writing their own keys and shared keys and
/// adding 1 to two shared counters with synced atomic updates, through a 3-member cluster. One of the sharing
/// processes is killed (SIGKILL) while an update of its is on its way to etcd and started again, then the leader is
/// killed and restarted, then (with root) a member is cut off from its peers and healed.
///
/// Beside the suite's checks (``FaultChecker``: no acknowledged write lost, no value back, shared keys by the rule, no
/// echo, every process's view on etcd's values), every settings file ends on etcd's values, every acknowledged
/// increment is a value of the counter's history, which rises by 1 at every revision, and each counter ends between the
/// acknowledged increments and those plus the ones whose outcome is unknown (the killed one among them); a conflict
/// reported for a value no process of the reporting machine wrote fails the test.
extension FaultInjectionTests {
	static func sharedFileSchedule(_ seed: UInt64) -> MachineFleet.Schedule {
		MachineFleet.Schedule(
			seed: seed, machines: 6, writes: 90, intervalMilliseconds: 70, removalPercent: 10, sharedFiles: 1,
			processesPerSharedFile: 3, incrementPercent: 25, counters: 2, viewsWhileWriting: true)
	}

	@Test(.scaledTimeLimit(minutes: 2), arguments: etcds)
	func processesSharingASettingsFileLoseNothingWhenOneIsKilledMidPushTheLeaderIsKilledAndAMemberIsCutOff(
		etcd: URL
	) async throws {
		let faults: [Fault] =
			[.sharingProcessKilledMidPush, .leaderKill] + (IsolatedNetwork.isAvailable ? [.memberCutOff] : [])
		let outcome = try await FaultRun(
			etcd: etcd, schedule: Self.sharedFileSchedule(11), faults: faults, faultSeconds: 1.5
		).run()
		print("fault injection: \(outcome)")
		outcome.expectNoViolations(echoes: true)
		// The kill landed while an increment was on its way (its process never logged the answer).
		#expect(outcome.incrementsCutByAKill == 1, "the kill was not mid-push: \(outcome)")
	}
}
