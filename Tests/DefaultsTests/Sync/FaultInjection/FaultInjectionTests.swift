import Foundation
import Testing

/// Sync under faults: a real 3-member etcd cluster, five machines as child processes writing their own key and shared
/// keys, one fault injected and healed while they write, then etcd's full history and every machine's log checked
/// (see ``FaultChecker``). Each scenario runs against every etcd the environment names (``EtcdServer/executables()``:
/// `DEFAULTS_TEST_ETCD` or the installed one, and `DEFAULTS_TEST_ETCD_35`).
///
/// Serialized: a scenario runs three etcd members and five machines, which is all two cores take.
@Suite(.serialized, .requiresEtcd) struct FaultInjectionTests {
	/// Fixed seeds, so that a failure here reproduces; `.ci/faults` runs random ones.
	static func schedule(_ seed: UInt64) -> MachineFleet.Schedule {
		MachineFleet.Schedule(seed: seed, removalPercent: 15)
	}

	static let etcds = EtcdServer.executables()

	private func expectNothingLost(_ fault: Fault, _ etcd: URL, seed: UInt64, for seconds: Double = 1.5) async throws {
		let outcome = try await FaultRun(
			etcd: etcd, schedule: Self.schedule(seed), faults: [fault], faultSeconds: seconds
		).run()
		print("fault injection: \(outcome)")
		outcome.expectNoViolations()
	}

	/// Every push attempt checked too, not only what etcd stored: a machine that reports a conflict lost for a value
	/// it never wrote either pushed back a value it received (an echo, refused by etcd's compare-and-swap) or reported
	/// the wrong value. On i18-engine 3436ecb nearly every scenario shows it (seed 5, whole-cluster restart: machines
	/// 0 to 3 each report "'own4': the local value m4.1.33 lost", machine 4's value they had received); seed 9 without
	/// a fault on etcd 3.5: machines 2 and 3 "'own1': the local value m1.1.0 lost". When such an echo's
	/// compare-and-swap succeeds, etcd stores the received value again (seed 1, leader kill, etcd 3.5: shared1=m0.1.2
	/// at revisions 10 and 18; seed 6 on etcd 3.5: own2=m2.1.2 at 10 and 13), which every scenario checks.
	/// Fixed by applying a watch batch with the stored keys kept current (`SyncWatchBatchTests`): a batch changing one
	/// key twice made the second change look like a local edit, which was pushed back.
	@Test(.scaledTimeLimit(minutes: 1), arguments: etcds)
	func noMachinePushesBackAValueItReceivedEvenAfterAWholeClusterRestart(etcd: URL) async throws {
		let outcome = try await FaultRun(etcd: etcd, schedule: Self.schedule(5), faults: [.clusterRestart]).run()
		print("fault injection: \(outcome)")
		outcome.expectNoViolations(echoes: true)
	}

	@Test(.scaledTimeLimit(minutes: 1), arguments: etcds)
	func aLeaderKilledWhileMachinesWriteLosesNothing(etcd: URL) async throws {
		try await expectNothingLost(.leaderKill, etcd, seed: 1)
	}

	@Test(.scaledTimeLimit(minutes: 1), arguments: etcds)
	func aMachineKilledAndRestartedLosesNothing(etcd: URL) async throws {
		try await expectNothingLost(.machineKill, etcd, seed: 2)
	}

	/// On i18-engine fd63cf4 it pushed back values it received: etcd stored the same value twice within a few
	/// revisions after the restart (seed 8: shared0=m1.1.39 at 171 and 174, own4=m4.1.37 at 175 and 178), 5 runs in 6.
	/// Runs in CI since the loss is remembered until every agreed key is back (`SyncSettingsFileEdgeTests`), not read
	/// from the file as it is, which one unrelated write made readable again.
	@Test(.scaledTimeLimit(minutes: 1), arguments: etcds)
	func aMachineWhoseSettingsFileIsLostRejoinsWithoutDeletingAnything(etcd: URL) async throws {
		try await expectNothingLost(.settingsFileLoss, etcd, seed: 8)
	}

	/// Failed 1 run in 7 with defect 4's signature (machine 0's own key back on m0.1.13 although m0.1.38 was
	/// acknowledged, etcd 3.4); passes since a conflict is settled against the newest remote change the machine knows
	/// (`SyncInFlightPushTests`).
	@Test(
		.scaledTimeLimit(minutes: 1), arguments: etcds)
	func aPausedLeaderLosesNothing(etcd: URL) async throws {
		try await expectNothingLost(.memberPause, etcd, seed: 3)
	}

	@Test(
		.scaledTimeLimit(minutes: 1), arguments: etcds)
	func aLostQuorumLosesNothingOnceItReturns(etcd: URL) async throws {
		try await expectNothingLost(.lostQuorum, etcd, seed: 4)
	}

	/// Held longer than a machine's request timeout (2 s): pushes the paused leader holds commit after their
	/// machines gave up on them. On i18-engine 811cf5e, 1 run in 4 (etcd 3.5): machine 3's own key ended on
	/// m3.1.12 (stored at revision 53, during the pause), every machine with it, although its owner had acknowledged
	/// writes up to m3.1.39 after it; on fd63cf4 the same on etcd 3.4 (m3.1.11 at revision 49). The cause: the watch
	/// delivered the machine's own older push, committed late, while its next push was on its way, and the conflict
	/// reply that followed was taken for another machine's (`SyncInFlightPushTests`).
	@Test(
		.scaledTimeLimit(minutes: 1), arguments: etcds)
	func aPausedQuorumLosesNothingOnceItGoesOn(etcd: URL) async throws {
		try await expectNothingLost(.pausedQuorum, etcd, seed: 7, for: 4)
	}

	@Test(.scaledTimeLimit(minutes: 1), arguments: etcds)
	func aWholeClusterRestartLosesNothing(etcd: URL) async throws {
		try await expectNothingLost(.clusterRestart, etcd, seed: 5)
	}

	/// Machines whose preferred member is cut off must hear the others through another member (before the watch
	/// asked for a leader, seed 6 left machines 1 and 4 without the others' writes 15 s after the heal). It waited
	/// for a steadier harness (the checker's read of the healed cluster failed, a heal took 49 s): the harness's heal
	/// left the member cut off, its routes to its peers gone (`IsolatedNetworkTests`).
	@Test(
		.scaledTimeLimit(minutes: 1),
		.enabled(
			if: IsolatedNetwork.isAvailable,
			"a member cut off from its peers needs network namespaces (root and `ip netns`), which this machine refuses"
		),
		arguments: etcds)
	func aMemberCutOffFromItsPeersLosesNothing(etcd: URL) async throws {
		try await expectNothingLost(.memberCutOff, etcd, seed: 6)
	}
}
