import DefaultsEtcd
import Foundation
import Testing

@testable import Defaults

/// The fault checker's look at etcd itself (``EtcdGateway/memberDisagreement(_:prefix:at:)``), tried on two separate
/// etcd servers standing in for two members: the same writes agree, a different value at one revision does not.
@Suite(.requiresEtcd, .scaledTimeLimit(minutes: 1)) struct EtcdMemberAgreementTests {
	@Test func membersHoldingDifferentValuesAtOneRevisionAreNamedWithTheKey() async throws {
		let first = try await EtcdServer.start()
		defer { first.stop() }
		let second = try await EtcdServer.start()
		defer { second.stop() }
		let endpoints = [first.endpoint, second.endpoint]
		for endpoint in endpoints {
			try await Self.put("same", at: "/agree/x", on: endpoint)
		}
		let agreed = try #require(await EtcdGateway.state(first.endpoint, prefix: "/agree/")).revision
		#expect(await EtcdGateway.memberDisagreement(endpoints, prefix: "/agree/", at: agreed) == nil)

		try await Self.put("mine", at: "/agree/y", on: first.endpoint)
		try await Self.put("theirs", at: "/agree/y", on: second.endpoint)
		let revision = try #require(await EtcdGateway.state(first.endpoint, prefix: "/agree/")).revision
		let disagreement = try #require(
			await EtcdGateway.memberDisagreement(endpoints, prefix: "/agree/", at: revision))
		#expect(disagreement.contains("y: mine / theirs"), "\(disagreement)")
		#expect(!disagreement.contains("x:"), "\(disagreement)")
		#expect(
			await EtcdGateway.memberDisagreement(endpoints, prefix: "/agree/", at: agreed) == nil, "the past agrees")
	}

	/// A run whose etcd members disagree is excused only on the versions known to lose applied writes, which needs the
	/// version of each etcd the tests run.
	@Test func theVersionOfEveryTestedEtcdIsKnown() throws {
		for etcd in EtcdServer.executables() {
			let version = try #require(EtcdServer.version(of: etcd), "\(etcd.path) printed no version")
			#expect(version.split(separator: ".").count == 3 && version.hasPrefix("3."), "\(version)")
		}
		#expect(EtcdServer.losesAppliedWritesOnCrash("3.5.1"))
		#expect(!EtcdServer.losesAppliedWritesOnCrash("3.4.23"))
		#expect(!EtcdServer.losesAppliedWritesOnCrash("3.5.3"))
	}

	static func put(_ value: String, at key: String, on endpoint: String) async throws {
		let client = try EtcdClient(endpoints: [endpoint])
		let result = try await client.compareAndSwap(
			key: key, value: try SyncedValueCoding.encode(value), expectedModRevision: 0)
		guard case .written = result else {
			Issue.record("etcd at \(endpoint) did not take \(key) = \(value): \(result)")
			return
		}
	}
}
