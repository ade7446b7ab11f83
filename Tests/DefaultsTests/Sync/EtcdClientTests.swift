import Defaults
import Foundation
import Testing

@testable import DefaultsEtcd

/// The etcd client against a real etcd: failing over to the next endpoint.
@Suite(.serialized, .timeLimit(.minutes(1))) struct EtcdClientTests {
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

#if canImport(FoundationNetworking)
	/// The URLSession transport, which https endpoints use on Linux, against the etcd 3.4 the tests run.
	@Suite(.serialized, .timeLimit(.minutes(1))) struct URLSessionGatewayTransportTests {
		@Test func anEtcdOlderThan35IsRefusedBeforeAnyGatewayRequest() async throws {
			let etcd = try await EtcdServer.start()
			defer { etcd.stop() }
			let endpoint = try #require(URL(string: etcd.endpoint))
			let transport = URLSessionGatewayTransport(endpoint: endpoint)
			// An error reply from etcd 3.4's gateway would end this process in FoundationNetworking; the transport must
			// refuse before it sends one.
			let request = GatewayRequest(
				url: endpoint.appending(path: "/v3/kv/range"), body: Data(#"{"key":""}"#.utf8), token: nil, timeout: 2)
			do {
				_ = try await transport.send(request)
				Issue.record("the request was sent to etcd 3.4 through URLSession")
			} catch Defaults.RemoteServiceError.refused(let reason) {
				#expect(reason.contains("runs etcd 3.4"), "\(reason)")
				#expect(reason.contains("etcd 3.5 or later"), "\(reason)")
			}
		}
	}
#endif
