import Defaults
import DefaultsEtcd
import Foundation
import Testing

/// Machines (child processes with config folders of their own) syncing through a real etcd.
///
/// Serialized: each test runs an etcd and two or three processes, which is all two cores take.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncAcrossMachinesTests {
	@Test func aChangeReachesTheOtherMachineAndItsObservers() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/converge/")
		let second = try Machine(etcd: etcd, prefix: "/test/converge/")

		// Observes with `Defaults.updates` and nothing else: the change has to arrive through the watch.
		// The observer keeps no clock: it waits for the value, or for `giveUp`, which the wait creates at its limit.
		let giveUp = second.folder.file("give-up")
		let observer = try second.start("sync-await", ["theme", "dark", giveUp.path])
		defer { observer.stopIfRunning() }
		try #require(try await observer.waitForOutput("ready", timeout: 20), "\(observer.standardErrorSoFar)")
		#expect(try await first.run("sync-write", ["theme=dark"]).lines == ["synced"])
		// Heard within the wait's limit; how soon ("within a second" on a LAN) is the benchmark's to measure.
		let heard = try await observer.wait(timeout: 20, givingUpBy: giveUp)
		#expect(heard.status == 0, "\(heard)")
	}

	/// A value another machine stored for a key this machine's administrator locked goes beneath the lock: the file
	/// holds what the sync state records as applied, the key reads the locked value, and once the lock is gone the
	/// received value reads (and nothing is pushed back over it).
	@Test func aValueReceivedForALockedKeyIsStoredBeneathTheLock() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/locked/")
		let second = try Machine(etcd: etcd, prefix: "/test/locked/")
		let system = try TemporaryDirectory()
		let locks = try PropertyListSerialization.data(fromPropertyList: ["theme": "locked"], format: .xml, options: 0)
		try locks.write(to: system.file("DefaultsTestHelper.locks.plist"))
		#expect(try await first.run("sync-write", ["theme=dark"]).lines == ["synced"])

		let locked = try await ChildProcess.run(
			["sync-dump", etcd.endpoint, second.prefix, "theme"],
			environment: second.environment.merging(["XDG_CONFIG_DIRS": system.url.path]) { _, new in new })
		#expect(locked.lines == ["synced", "theme=locked"], "\(locked)")
		#expect(
			try FileContents.values(of: second.folder.file("DefaultsTestHelper.plist"))["theme"] as? String == "dark")
		let empty = try TemporaryDirectory()
		let unlocked = try await ChildProcess.run(
			["sync-dump", etcd.endpoint, second.prefix, "theme"],
			environment: second.environment.merging(["XDG_CONFIG_DIRS": empty.url.path]) { _, new in new })
		#expect(unlocked.lines == ["synced", "theme=dark"], "\(unlocked)")
		#expect(try await first.values(["theme"]) == (true, ["theme": "dark"]))
	}

	@Test func bothMachinesConvergeWithNothingLostWhenEtcdDiesWhileTheyWrite() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/outage/")
		let second = try Machine(etcd: etcd, prefix: "/test/outage/")

		// Each writer writes half its keys, waits for `go`, and writes the other half: etcd dies between the halves,
		// and comes back once both have written every key, the second half while it was down.
		let go = first.folder.file("go")
		let writers = [
			try first.start("sync-keep-writing", ["a", "20", "40", "25", go.path]),
			try second.start("sync-keep-writing", ["b", "20", "40", "25", go.path]),
		]
		defer { writers.forEach { $0.stopIfRunning() } }
		for writer in writers {
			try #require(try await writer.waitForOutput("halfway", timeout: 20), "\(writer.standardErrorSoFar)")
		}
		etcd.kill()
		_ = FileManager.default.createFile(atPath: go.path, contents: nil)
		for writer in writers {
			try #require(try await writer.waitForOutput("written", timeout: 20), "\(writer.standardErrorSoFar)")
		}
		try await etcd.restart()
		for writer in writers {
			let result = try await writer.wait(timeout: 30)
			#expect(result.status == 0, "\(result)")
		}
		let names = (0..<20).map { "a\($0)" } + (0..<20).map { "b\($0)" }
		for machine in [first, second] {
			let (isSynced, values) = try await machine.values(names)
			#expect(isSynced)
			#expect(values.count == 40, "\(values.keys.sorted())")
		}
	}

	@Test func aChangeMadeOfflineIsPushedWhenTheMachineStartsAgain() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let laptop = try Machine(etcd: etcd, prefix: "/test/offline/")
		let desktop = try Machine(etcd: etcd, prefix: "/test/offline/")
		#expect(try await laptop.run("sync-write", ["font=mono"]).lines == ["synced"])

		etcd.kill()
		let offline = try await laptop.run("sync-write", ["font=serif"])
		#expect(offline.lines == ["offline"])
		// One failure for the outage, however many writes.
		#expect(offline.standardError.components(separatedBy: "stopped:").count == 2, "\(offline)")

		try await etcd.restart()
		#expect(try await desktop.values(["font"]).values == ["font": "mono"])
		// The laptop starts again: the queue from the last run goes out.
		#expect(try await laptop.values(["font"]) == (true, ["font": "serif"]))
		#expect(try await desktop.values(["font"]).values == ["font": "serif"])
	}

	/// The conflict rule, as the DocC article "Syncing across machines" states it: of two changes to a key made without seeing each other, the one
	/// etcd commits first is kept on every machine, and the other machine is told.
	@Test func ofTwoChangesMadeWithoutSeeingEachOtherTheOneEtcdCommitsFirstIsKeptEverywhere() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/conflict/")
		let second = try Machine(etcd: etcd, prefix: "/test/conflict/")
		#expect(try await first.run("sync-write", ["mode=base"]).lines == ["synced"])
		#expect(try await second.values(["mode"]).values == ["mode": "base"])

		etcd.kill()
		#expect(try await first.run("sync-write", ["mode=first"]).lines == ["offline"])
		#expect(try await second.run("sync-write", ["mode=second"]).lines == ["offline"])
		try await etcd.restart()

		// Both edits were made against the revision of "base". The first machine back pushes first: its
		// compare-and-swap succeeds. The second machine's fails, so the remote value wins there too.
		#expect(try await first.values(["mode"]).values == ["mode": "first"])
		let loser = try await second.run("sync-dump", ["mode"])
		#expect(loser.lines == ["synced", "mode=first"], "\(loser)")
		// Told, with both values, so that the app can write its value again or ask its user.
		#expect(loser.standardError.contains("lost a sync conflict"), "\(loser)")
		#expect(loser.standardError.contains("second") && loser.standardError.contains("first"), "\(loser)")
		#expect(try await second.values(["mode"]).values == ["mode": "first"])
		#expect(try await first.values(["mode"]).values == ["mode": "first"])
	}

	@Test func aRemovalReachesTheOtherMachine() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/removal/")
		let second = try Machine(etcd: etcd, prefix: "/test/removal/")
		#expect(try await first.run("sync-write", ["token=abc"]).lines == ["synced"])
		#expect(try await second.values(["token"]).values == ["token": "abc"])

		let giveUp = second.folder.file("give-up")
		let observer = try second.start("sync-await", ["token", "-", giveUp.path])
		defer { observer.stopIfRunning() }
		try #require(try await observer.waitForOutput("ready", timeout: 20), "\(observer.standardErrorSoFar)")
		#expect(try await first.run("sync-write", ["token=-"]).lines == ["synced"])
		let heard = try await observer.wait(timeout: 20, givingUpBy: giveUp)
		#expect(heard.status == 0, "\(heard)")
		#expect(try await second.values(["token"]).values.isEmpty)
	}

	@Test func aThousandKeysReachANewMachine() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/many/")
		#expect(try await first.run("sync-write", ["key*1000=value"], timeout: 40).lines == ["synced"])

		let newcomer = try Machine(etcd: etcd, prefix: "/test/many/")
		let (isSynced, values) = try await newcomer.values(["key*1000"])
		#expect(isSynced)
		#expect(values.count == 1000)
		#expect(Set(values.values) == ["value"])
	}

	@Test func aBadValuePlantedInEtcdIsReportedAndLeftAlone() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let machine = try Machine(etcd: etcd, prefix: "/test/bad/")
		#expect(try await machine.run("sync-write", ["color=red"]).lines == ["synced"])

		let client = try EtcdClient(endpoints: [etcd.endpoint])
		let current = try #require(try await client.read(prefix: "/test/bad/color").entries.first)
		let planted = Data("not a property list".utf8)
		#expect(
			try await client.compareAndSwap(key: current.key, value: planted, expectedModRevision: current.modRevision)
				!= .conflict(current: nil))

		let result = try await machine.run("sync-dump", ["color"])
		#expect(result.lines == ["synced", "color=red"], "\(result)")
		#expect(result.standardError.contains("not a synced stored form"), "\(result)")
		#expect(try await client.read(prefix: "/test/bad/color").entries.first?.value == planted)
	}

	@Test func aValueTooLargeForEtcdIsReportedKeptLocallyAndDoesNotHoldUpTheOthers() async throws {
		let etcd = try await EtcdServer.start(["--max-request-bytes", "4096"])
		defer { etcd.stop() }
		let writer = try Machine(etcd: etcd, prefix: "/test/large/")
		let reader = try Machine(etcd: etcd, prefix: "/test/large/")
		let large = String(repeating: "x", count: 8192)

		let result = try await writer.run("sync-write", ["notes=\(large)", "theme=dark"])
		#expect(result.lines == ["connected, not all synced"], "synchronize() says a change did not go out: \(result)")
		#expect(result.standardError.contains("will not store a value this large"), "\(result)")
		#expect(try await writer.values(["notes"]).values == ["notes": large])
		let (isSynced, values) = try await reader.values(["notes", "theme"])
		#expect(isSynced)
		#expect(values == ["theme": "dark"])

		// The key syncs again once it changes: a later change elsewhere replaces the held value, like any later
		// change, and a later change here is pushed.
		#expect(try await reader.run("sync-write", ["notes=small"]).lines == ["synced"])
		#expect(try await writer.values(["notes"]).values == ["notes": "small"])
		#expect(try await writer.run("sync-write", ["notes=mine"]).lines == ["synced"])
		#expect(try await reader.values(["notes"]).values == ["notes": "mine"])
		#expect(try await writer.values(["notes"]).values == ["notes": "mine"])
	}
}
