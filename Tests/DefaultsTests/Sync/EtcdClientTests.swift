import Defaults
import DefaultsEtcd
import Foundation
import Testing

/// The etcd client against a real etcd: failing over to the next endpoint.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct EtcdClientTests {
	@Test func aDeadEndpointIsPassedOverForTheNextOne() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let dead = "http://127.0.0.1:\(try EtcdServer.freePort())"
		let client = try EtcdClient(endpoints: [dead, etcd.endpoint], requestTimeout: 2)
		let written = try await client.compareAndSwap(
			key: "/test/failover/k", value: Data("v".utf8), expectedModRevision: 0)
		guard case .written = written else {
			Issue.record("the write was not applied: \(written)")
			return
		}
		let snapshot = try await client.read(prefix: "/test/failover/")
		#expect(snapshot.entries.map(\.value) == [Data("v".utf8)])
	}
}

/// https endpoints: TLS through URLSession, with the server's certificate verified.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct EtcdTLSTests {
	@Test func anEndpointWhoseCertificateIsNotTrustedIsNeverSpokenToInTheClear() async throws {
		let etcd = try await EtcdServer.start(["--auto-tls"])
		defer { etcd.stop() }
		#expect(etcd.endpoint.hasPrefix("https://"))
		let client = try EtcdClient(endpoints: [etcd.endpoint], requestTimeout: 2)
		do {
			_ = try await client.read(prefix: "/")
			Issue.record("a read succeeded against a certificate nothing trusts")
		} catch Defaults.RemoteServiceError.unreachable(let reason) {
			#expect(EtcdServer.isCertificateRefusal(reason), "\(reason)")
		}
	}
}
