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
		#expect(try first.run("sync-write", ["theme=light"]).lines == ["synced"])
		#expect(try second.values(["theme"]).values == ["theme": "light"])

		// The listener keeps no clock: it waits for the value, or for `giveUp`, which the wait creates at its limit.
		let giveUp = first.folder.file("give-up")
		let listener = try first.start("sync-await-and-die", ["theme", "dark", giveUp.path])
		defer { listener.stopIfRunning() }
		try #require(try await listener.waitForOutput("ready", timeout: 20), "\(listener.standardErrorSoFar)")
		#expect(try second.run("sync-write", ["theme=dark"]).lines == ["synced"])
		#expect(try await listener.wait(timeout: 20, givingUpBy: giveUp).status == 0)

		#expect(try first.values(["theme"]) == (true, ["theme": "dark"]))
		#expect(try second.values(["theme"]).values == ["theme": "dark"])
	}

	@Test func theStateFilesAreReadableByTheirOwnerOnly() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let machine = try Machine(etcd: etcd, prefix: "/test/mode/")
		#expect(try machine.run("sync-write", ["secret=value"]).lines == ["synced"])
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
		let started = Date()
		#expect(try tool.run("sync-write-and-exit", ["level=high"]).lines == ["written"])
		#expect(Date().timeIntervalSince(started) < 10)
		#expect(try other.values(["level"]).values == ["level": "high"])
	}

	@Test func aSettingsFileLostWhileTheMachineRunsDeletesNothingElsewhere() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let first = try Machine(etcd: etcd, prefix: "/test/lost-running/")
		let second = try Machine(etcd: etcd, prefix: "/test/lost-running/")
		#expect(try first.run("sync-write", ["theme=dark", "font=mono"]).lines == ["synced"])

		// Runs for 3 s, listening for a value that never comes.
		let running = try first.start("sync-await", ["theme", "never", "3"])
		#expect(try await running.waitForOutput("ready"))
		try FileManager.default.removeItem(at: first.settingsFile)
		_ = try await running.wait(timeout: 10)

		let client = try EtcdClient(endpoints: [etcd.endpoint])
		let entries = try await client.read(prefix: "/test/lost-running/").entries
		#expect(
			entries.map(\.key).sorted() == [
				"/test/lost-running/.defaults-epoch", "/test/lost-running/font", "/test/lost-running/theme",
			])
		#expect(try second.values(["theme", "font"]).values == ["theme": "dark", "font": "mono"])
	}
}
