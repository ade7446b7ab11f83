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

	/// Three ways etcd cannot be reached at exit. A port that refuses connections (a socket bound and not listening,
	/// held so that nobody else takes the port) ends a request at once. A member that accepts the connection and
	/// never answers (an etcd stopped with SIGSTOP; here a listening socket nobody accepts from, whose connections the
	/// kernel completes) ends it within about 2 s, whatever the request's timeout: the client checks a member that
	/// keeps a request waiting 1 s with a read of its own (`EtcdClient.answerCheckDelay`) and gives up on one that
	/// does not answer that read within 1 s. A member that answers the check and never the write (its disk stalled:
	/// serializable reads come from memory, a write waits for the disk) holds the push for as long as the request's
	/// timeout: there only the exit's bound ends the wait.
	enum UnreachableEndpoint: String, CaseIterable, CustomTestStringConvertible {
		case silent
		case refusing
		case stalledDisk

		var testDescription: String { rawValue }

		/// The endpoint, and what ends it.
		func open() throws -> (endpoint: String, close: () -> Void) {
			guard self == .stalledDisk else {
				let (socket, port) = try EtcdServer.loopbackSocket(listening: self == .silent)
				return ("http://127.0.0.1:\(port)", { _ = Foundation.close(socket) })
			}
			let header = #"{"header":{"cluster_id":"1","member_id":"1","revision":"1","raft_term":"2"}}"#
			let gateway = try FakeGateway { path, body in
				guard path == "/v3/kv/range", body.contains("serializable") else {
					return nil
				}
				return EtcdErrorMessageTests.reply("200 OK", header)
			}
			return (gateway.endpoint, gateway.stop)
		}
	}

	/// The exit's push is bounded (`SyncEngine.exitWait`) whatever etcd does: the program exits normally, its file
	/// written, the change kept in the journal with no temporary file of the sync state left, and the next run pushes
	/// it. The child's requests time out after an hour, so a push waiting for the stalled member's answer outlasts
	/// the child's time limit by far: only the exit's own bound ends it (without it, `stalledDisk` runs into the
	/// time limit; the other two end by the client's own checks, see ``UnreachableEndpoint``).
	@Test(arguments: UnreachableEndpoint.allCases)
	func aProgramExitingWhileEtcdCannotBeReachedEndsAndItsChangeGoesOutAtTheNextRun(
		_ unreachable: UnreachableEndpoint
	) async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let machine = try Machine(etcd: etcd, prefix: "/test/exit-\(unreachable.rawValue)/")
		let (endpoint, close) = try unreachable.open()
		defer { close() }
		var environment = machine.environment
		environment["DEFAULTS_TEST_REQUEST_TIMEOUT"] = "3600"
		let result = try await ChildProcess.run(
			["sync-write-and-exit", endpoint, machine.prefix, "level=high"], environment: environment, timeout: 30)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["written"], "\(result)")
		#expect((try? FileContents.values(of: machine.settingsFile))?["level"] as? String == "high")
		guard case .lines(let lines) = ChangeJournal(besideSettingsFile: SettingsFile(url: machine.settingsFile)).read()
		else {
			Issue.record("no journal beside the settings file")
			return
		}
		#expect(lines.contains { $0.k == "level" }, "\(lines)")
		let temporary = try FileManager.default.contentsOfDirectory(atPath: machine.folder.url.path)
			.filter { $0.contains(".tmp") }
		#expect(temporary.isEmpty, "\(temporary)")

		#expect(try await machine.values(["level"]) == (true, ["level": "high"]))
		let other = try Machine(etcd: etcd, prefix: machine.prefix)
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
