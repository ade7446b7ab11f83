import DefaultsEtcd
import Foundation
import Testing

@testable import Defaults

/// The order of the settings file and the sync state on disk, the state file's mode, and programs that exit at once
/// (issue 18, items 1, 3, 8 and 10): each test here failed before its fix.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncDurabilityTests {
	@Test func aMachineKilledRightAfterHearingAValueDoesNotPushItsOlderOneLater() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/killed/")
		let second = try Machine(etcd: etcd, prefix: "/test/killed/")
		#expect(try await first.run("sync-write", ["theme=light"]).lines == ["synced"])
		#expect(try await second.values(["theme"]).values == ["theme": "light"])

		// The listener keeps no clock: it waits for the value, or for `giveUp`, which the wait creates at its limit.
		let giveUp = first.folder.file("give-up")
		let listener = try first.start("sync-await-and-die", ["theme", "dark", giveUp.path])
		defer { listener.stopIfRunning() }
		try #require(try await listener.waitForOutput("ready", timeout: 20), "\(listener.standardErrorSoFar)")
		#expect(try await second.run("sync-write", ["theme=dark"]).lines == ["synced"])
		#expect(try await listener.wait(timeout: 20, givingUpBy: giveUp).status == 0)

		#expect(try await first.values(["theme"]) == (true, ["theme": "dark"]))
		#expect(try await second.values(["theme"]).values == ["theme": "dark"])
	}

	@Test func theStateFilesAreReadableByTheirOwnerOnly() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let machine = try Machine(etcd: etcd, prefix: "/test/mode/")
		#expect(try await machine.run("sync-write", ["secret=value"]).lines == ["synced"])
		let journal = URL(
			filePath: machine.stateFile.path.replacingOccurrences(of: ".sync.json", with: ".sync.intents"))
		for file in [machine.stateFile, journal] {
			let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
			#expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file.lastPathComponent)")
		}
	}

	@Test func aProgramThatWritesAndExitsAtOnceGetsItsValueToEtcd() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let tool = try Machine(etcd: etcd, prefix: "/test/exit/")
		let other = try Machine(etcd: etcd, prefix: "/test/exit/")
		// The exit's wait is bounded (`SyncEngine.exitWait`, 2 s); one without a bound would run into the child's
		// time limit, which fails the test. How soon the value goes out is not timed here: process start-up on a busy
		// machine is most of it.
		#expect(try await tool.run("sync-write-and-exit", ["level=high"], timeout: 30).lines == ["written"])
		#expect(try await other.values(["level"]).values == ["level": "high"])
	}

	@Test func aSettingsFileLostWhileTheMachineRunsDeletesNothingElsewhere() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/lost-running/")
		let second = try Machine(etcd: etcd, prefix: "/test/lost-running/")
		#expect(try await first.run("sync-write", ["theme=dark", "font=mono"]).lines == ["synced"])

		// The running machine says `ready` once its first read has ended (a loss that read takes in is put back before
		// the store reads the key as removed: stop 40's CI saw that wait run out). It waits until it has taken in the
		// file's loss (its key reads as removed), then synchronises once: every pass the loss woke has ended when that
		// returns, and its full read puts the agreed values back. Any push of the removals would have gone out by then.
		let giveUp = first.folder.file("give-up")
		let running = try first.start("sync-await-then-synchronize", ["theme", "-", giveUp.path])
		defer { running.stopIfRunning() }
		try #require(try await running.waitForOutput("ready", timeout: 20), "\(running.standardErrorSoFar)")
		try FileManager.default.removeItem(at: first.settingsFile)
		let result = try await running.wait(timeout: 20, givingUpBy: giveUp)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["ready", "heard", "synced"], "\(result)")
		#expect(result.standardError.contains("keys theme of '/test/lost-running/' were changed"), "\(result)")
		#expect((try? FileContents.values(of: first.settingsFile))?["theme"] as? String == "dark", "put back")

		let client = try EtcdClient(endpoints: [etcd.endpoint])
		let entries = try await client.read(prefix: "/test/lost-running/").entries
		#expect(
			entries.map(\.key).sorted() == [
				"/test/lost-running/.defaults-epoch", "/test/lost-running/font", "/test/lost-running/theme",
			])
		#expect(try await second.values(["theme", "font"]).values == ["theme": "dark", "font": "mono"])
	}
}
