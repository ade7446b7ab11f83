import Foundation
import Testing

@testable import Defaults
@testable import DefaultsEtcd

/// `EtcdFailoverOutcomeTests` through the socket transport, whose own failures say whether the request left.
@Suite(.scaledTimeLimit(minutes: 1)) struct EtcdFailoverSocketTests {
	static func writeError(_ client: EtcdClient) async -> Defaults.RemoteServiceError? {
		do {
			_ = try await client.compareAndSwap(key: "/t/k", value: Data("v".utf8), expectedModRevision: 0)
			return nil
		} catch {
			return error as? Defaults.RemoteServiceError
		}
	}

	#if canImport(Glibc)
		/// A port nothing listens on (the connection refused, the write never sent), then a gateway that refuses the
		/// write as too large: too large (before, "unreachable", as if the first member might have applied it).
		@Test func aClosedPortThenATooLargeRefusalIsTooLarge() async throws {
			let tooLarge =
				#"{"error":"etcdserver: request is too large","message":"etcdserver: request is too large","code":3}"#
			let gateway = try FakeGateway { _ in EtcdErrorMessageTests.reply("400 Bad Request", tooLarge) }
			defer { gateway.stop() }
			let dead = "http://127.0.0.1:\(try EtcdServer.freePort())"
			let client = try EtcdClient(endpoints: [dead, gateway.endpoint], requestTimeout: 2)
			let error = await Self.writeError(client)
			guard case .valueTooLarge(let reason)? = error else {
				Issue.record("reported as \(String(describing: error))")
				return
			}
			#expect(reason.contains("request is too large"))
		}

		/// A first member whose answer is not HTTP: named, not "the remote cannot be reached: ; then …".
		@Test func aFirstAnswerThatIsNotHTTPIsNamed() async throws {
			let gateway = try FakeGateway { _ in "SOMETHING ELSE\r\n\r\n" }
			defer { gateway.stop() }
			let client = try EtcdClient(endpoints: [gateway.endpoint, gateway.endpoint], requestTimeout: 2)
			let error = try #require(await Self.writeError(client))
			#expect(!"\(error)".contains(": ;"), "\(error)")
			#expect("\(error)".contains("SOMETHING ELSE"), "\(error)")
		}
	#endif
}
