import Defaults
import Foundation
import Synchronization
import Testing

@testable import DefaultsEtcd

/// etcd's error replies (authentication, permissions, limits) against a real etcd: each one an error that says what
/// etcd said, never a crash. On Linux, etcd 3.4 ends every error reply with an HTTP trailer, on which
/// FoundationNetworking traps; these tests are the ones that would end the test process if a request went through it.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct EtcdAuthenticationTests {
	static let editor = EtcdClient.Credentials(user: "editor", password: "editor-password")

	private func refusal(_ body: () async throws -> Void) async -> String? {
		do {
			try await body()
			return nil
		} catch Defaults.RemoteServiceError.refused(let reason) {
			return reason
		} catch {
			Issue.record("expected a refusal, got \(error)")
			return nil
		}
	}

	@Test func aUserReadsAndWritesItsPrefixWithAToken() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		let client = try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2)

		let written = try await client.compareAndSwap(
			key: "/team/theme", value: Data("dark".utf8), expectedModRevision: 0)
		guard case .written = written else {
			Issue.record("the write was not applied: \(written)")
			return
		}
		#expect(try await client.read(prefix: "/team/").entries.map(\.value) == [Data("dark".utf8)])
		#expect(client.authentications.load(ordering: .relaxed) == 1)
	}

	@Test func aWrongPasswordIsRefusedWithEtcdsReason() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		let client = try EtcdClient(
			endpoints: [etcd.endpoint], credentials: .init(user: "editor", password: "wrong"), requestTimeout: 2)

		let reason = await refusal { _ = try await client.read(prefix: "/team/") }
		#expect(reason?.contains("authentication as 'editor' failed") == true, "\(reason ?? "no error")")
		#expect(reason?.contains("invalid user ID or password") == true, "\(reason ?? "no error")")
	}

	@Test func aClientWithoutCredentialsIsToldThatEtcdWantsThem() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		let client = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 2)

		let reason = await refusal { _ = try await client.read(prefix: "/team/") }
		#expect(reason?.contains("user name is empty") == true, "\(reason ?? "no error")")
	}

	@Test func keysOutsideTheUsersPrefixAreRefusedForReadWriteAndWatch() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		let client = try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2)

		let read = await refusal { _ = try await client.read(prefix: "/other/") }
		#expect(read?.contains("permission denied") == true, "\(read ?? "no error")")
		let write = await refusal {
			_ = try await client.compareAndSwap(key: "/other/k", value: Data("v".utf8), expectedModRevision: 0)
		}
		#expect(write?.contains("permission denied") == true, "\(write ?? "no error")")
		let watch = await refusal {
			for try await _ in client.watch(prefix: "/other/", fromRevision: 1) {}
		}
		#expect(watch?.contains("permission denied") == true, "\(watch ?? "the watch ended without an error")")
	}

	@Test func anExpiredTokenIsRenewedAndTheRequestRetriedOnce() async throws {
		// etcd forgets a simple token after this many seconds without use. Under the thread sanitizer a renewal and
		// its retry can take longer than 1 s, and the renewed token expired before the retry reached etcd; under load
		// (the whole sync pass beside it) the first read took longer than 1 s and renewed its token once more.
		let ttl = runsUnderThreadSanitizer ? 5 : 2
		let etcd = try await EtcdServer.start(["--auth-token-ttl", "\(ttl)"])
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		let client = try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2)

		_ = try await client.read(prefix: "/team/")
		#expect(client.authentications.load(ordering: .relaxed) == 1)
		try await Task.sleep(for: .milliseconds(2500 * ttl))
		_ = try await client.read(prefix: "/team/")
		#expect(client.authentications.load(ordering: .relaxed) == 2)
	}

	@Test func aValueOverEtcdsRequestLimitIsRefusedAndTheClientGoesOn() async throws {
		let etcd = try await EtcdServer.start(["--max-request-bytes", "4096"])
		defer { etcd.stop() }
		let client = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 2)

		do {
			_ = try await client.compareAndSwap(
				key: "/big/k", value: Data(repeating: 7, count: 8192), expectedModRevision: 0)
			Issue.record("a value over etcd's limit was written")
		} catch Defaults.RemoteServiceError.valueTooLarge(let reason) {
			#expect(reason.contains("request is too large"), "\(reason)")
		}
		let small = try await client.compareAndSwap(key: "/big/k", value: Data("v".utf8), expectedModRevision: 0)
		guard case .written = small else {
			Issue.record("a small write after the refusal was not applied: \(small)")
			return
		}
	}

	@Test func aMachineKeepsPushingAcrossTokenExpiriesAndTheOtherGetsEveryValue() async throws {
		let etcd = try await EtcdServer.start(["--auth-token-ttl", "1"])
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		let writer = try Machine(etcd: etcd, prefix: "/team/", credentials: Self.editor)
		let reader = try Machine(etcd: etcd, prefix: "/team/", credentials: Self.editor)

		// Three writes 1.5 s apart: etcd forgets the writer's token before each of the last two.
		let result = try await writer.run("sync-keep-writing", ["k", "3", "1500", "15"], timeout: 30)
		#expect(result.lines.last == "synced", "\(result)")
		let (isSynced, values) = try await reader.values(["k0", "k1", "k2"])
		#expect(isSynced)
		#expect(values.keys.sorted() == ["k0", "k1", "k2"], "\(values)")
		// A role granting the prefix, as the article sets it up, lets the engines make the prefix's epoch key.
		let client = try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2)
		#expect(try await client.read(prefix: "/team/.defaults-epoch").entries.count == 1)
	}

	@Test func aBatchOverGRPCsMessageLimitIsTooLargeNotAnUnexpectedAnswer() async throws {
		// etcd takes gRPC messages up to --max-request-bytes plus 512 KiB, and answers larger ones itself (code 8).
		let etcd = try await EtcdServer.start(["--max-request-bytes", "4096"])
		defer { etcd.stop() }
		let client = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 5)
		let writes = (0..<70).map {
			Defaults.RemoteWrite(key: "/batch/k\($0)", value: Data(repeating: 1, count: 10_000), expectedModRevision: 0)
		}
		do {
			_ = try await client.compareAndSwap(all: writes)
			Issue.record("a 700 KB transaction was written past a 4 KB limit")
		} catch Defaults.RemoteServiceError.valueTooLarge(let reason) {
			#expect(reason.contains("larger than max"), "\(reason)")
		}
	}

	@Test func aWatchStoppedWhileItsTokenIsFetchedLeavesNoWatchOnEtcd() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		for _ in 0..<5 {
			// A new client each time: no token yet, so the watch first authenticates, and is stopped meanwhile.
			let client = try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2)
			let consumer = Task {
				for try await _ in client.watch(prefix: "/team/", fromRevision: 1) {}
			}
			try await Task.sleep(for: .milliseconds(5))
			consumer.cancel()
		}
		// A watch opened after its consumer stopped is closed within a poll slice (250 ms); etcd may take a moment
		// to count it gone, longer on a busy machine: up to 20 s.
		var count = try await etcd.watchStreamCount()
		for _ in 0..<200 where count != 0 {
			try await Task.sleep(for: .milliseconds(100))
			count = try await etcd.watchStreamCount()
		}
		#expect(count == 0)
	}

	@Test func aMachineWithAWrongPasswordBacksOffAndReportsItOnce() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		FailureRecorder.start()
		let folder = try TemporaryDirectory()
		let stateFile = folder.file("sync.json")
		let prefix = "/team/\(UUID().uuidString)/"
		// Synced once, with the right password.
		let good = try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2)
		let store = Defaults.InMemoryStore()
		let first = Defaults.SyncEngine(remote: good, prefix: prefix, store: store, stateFile: stateFile)
		first.add(["theme"])
		try store.write("dark", forKey: "theme")
		#expect(await first.synchronize())
		first.stop()

		let wrong = CountingRemote(
			try EtcdClient(
				endpoints: [etcd.endpoint], credentials: .init(user: "editor", password: "stale"), requestTimeout: 2))
		let second = Defaults.SyncEngine(remote: wrong, prefix: prefix, store: store, stateFile: stateFile)
		second.add(["theme"])
		let started = ContinuousClock.now
		second.start()
		// Waits of 0.1, 0.2, 0.4, 0.8 and 1.6 s before the sixth try, not 50 ms each: tries in a loop made six in 0.8 s
		// here (each costs etcd a password check). A busy machine only lengthens this.
		let deadline = started + Duration.seconds(30).scaledForSanitizer
		while wrong.calls.load(ordering: .relaxed) < 6, ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(10))
		}
		let elapsed = ContinuousClock.now - started
		second.stop()
		#expect(wrong.calls.load(ordering: .relaxed) >= 6)
		#expect(elapsed >= .seconds(3), "six tries in \(elapsed)")
		let reports = FailureRecorder.failures(forKey: prefix)
		#expect(reports.count == 1, "\(reports.map(\.message))")
		#expect(second.status.isConnected == false)
	}
}

extension EtcdAuthenticationTests {
	@Test func aPushRefusedAfterTheWatchStartedBacksOffAndIsReportedOnce() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		// Allowed to read and watch the prefix, not to write it.
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/", permission: "READ")
		FailureRecorder.start()
		let prefix = "/team/\(UUID().uuidString)/"
		let remote = CountingRemote(
			try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2))
		let store = Defaults.InMemoryStore()
		try store.write("dark", forKey: "theme")
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["theme"])
		engine.start()
		// The first refusal comes within moments, or many seconds under the thread sanitizer; the 3 s counted start
		// there.
		let deadline = ContinuousClock.now + Duration.seconds(20).scaledForSanitizer
		while FailureRecorder.failures(forKey: prefix).isEmpty, ContinuousClock.now < deadline {
			try await Task.sleep(for: .milliseconds(50))
		}
		let callsBefore = remote.calls.load(ordering: .relaxed)
		let started = ContinuousClock.now
		// Each session: a read of the prefix (the remote may not be the one it was), a watch (answered) and a refused
		// push, after waits of 0.1, 0.2, 0.4 and 0.8 s (the first may be partly behind already): four more sessions
		// take over 1.4 s, not 200 ms as one every 50 ms would.
		while remote.calls.load(ordering: .relaxed) - callsBefore < 12, ContinuousClock.now < deadline + .seconds(30) {
			try await Task.sleep(for: .milliseconds(10))
		}
		let elapsed = ContinuousClock.now - started
		engine.stop()
		let calls = remote.calls.load(ordering: .relaxed) - callsBefore
		#expect(calls >= 12)
		#expect(elapsed >= .milliseconds(1_000), "\(calls) calls in \(elapsed)")
		let reports = FailureRecorder.failures(forKey: prefix)
		#expect(reports.count == 1, "\(reports.map(\.message))")
		#expect(reports.first?.message.contains("permission denied") == true, "\(reports.map(\.message))")
	}
}

/// A remote that counts the requests and watches made through it.
final class CountingRemote: Defaults.RemoteKeyValueService {
	let base: any Defaults.RemoteKeyValueService
	let calls = Atomic<Int>(0)

	init(_ base: any Defaults.RemoteKeyValueService) {
		self.base = base
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		calls.add(1, ordering: .relaxed)
		return try await base.read(prefix: prefix)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws
		-> Defaults.RemoteWriteResult
	{
		calls.add(1, ordering: .relaxed)
		return try await base.compareAndSwap(key: key, value: value, expectedModRevision: expectedModRevision)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		calls.add(1, ordering: .relaxed)
		return try await base.compareAndSwap(all: writes)
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		calls.add(1, ordering: .relaxed)
		return base.watch(prefix: prefix, fromRevision: revision)
	}
}
