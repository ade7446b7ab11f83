import Defaults
import Foundation
import Testing

@testable import DefaultsEtcd

/// etcd's error replies (authentication, permissions, limits) against a real etcd: each one an error that says what
/// etcd said, never a crash. On Linux, etcd 3.4 ends every error reply with an HTTP trailer, on which
/// FoundationNetworking traps; these tests are the ones that would end the test process if a request went through it.
@Suite(.serialized, .timeLimit(.minutes(1))) struct EtcdAuthenticationTests {
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
		// etcd forgets a simple token after this many seconds without use.
		let etcd = try await EtcdServer.start(["--auth-token-ttl", "1"])
		defer { etcd.stop() }
		try await etcd.enableAuthentication(user: Self.editor, prefix: "/team/")
		let client = try EtcdClient(endpoints: [etcd.endpoint], credentials: Self.editor, requestTimeout: 2)

		_ = try await client.read(prefix: "/team/")
		#expect(client.authentications.load(ordering: .relaxed) == 1)
		try await Task.sleep(for: .milliseconds(2500))
		_ = try await client.read(prefix: "/team/")
		#expect(client.authentications.load(ordering: .relaxed) == 2)
	}

	@Test func aValueOverEtcdsRequestLimitIsRefusedAndTheClientGoesOn() async throws {
		let etcd = try await EtcdServer.start(["--max-request-bytes", "4096"])
		defer { etcd.stop() }
		let client = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 2)

		await #expect(throws: Defaults.RemoteServiceError.self) {
			do {
				_ = try await client.compareAndSwap(
					key: "/big/k", value: Data(repeating: 7, count: 8192), expectedModRevision: 0)
			} catch Defaults.RemoteServiceError.valueTooLarge(let reason) {
				#expect(reason.contains("request is too large"))
				throw Defaults.RemoteServiceError.valueTooLarge(reason)
			}
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
		let result = try writer.run("sync-keep-writing", ["k", "3", "1500", "15"], timeout: 30)
		#expect(result.lines.last == "synced", "\(result)")
		let (isSynced, values) = try reader.values(["k0", "k1", "k2"])
		#expect(isSynced)
		#expect(values.keys.sorted() == ["k0", "k1", "k2"], "\(values)")
	}
}
