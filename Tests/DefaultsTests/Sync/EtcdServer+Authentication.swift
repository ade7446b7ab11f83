import Defaults
import Foundation

@testable import DefaultsEtcd

#if canImport(FoundationNetworking)
	import FoundationNetworking
#endif

extension EtcdServer {
	/// Turns on etcd's authentication: a `root` user (which etcd requires first) and `user`, allowed to read and write
	/// the keys under `prefix` and nothing else.
	func enableAuthentication(
		user: EtcdClient.Credentials, prefix: String, permission: String = "READWRITE"
	) async throws {
		let rangeEnd = EtcdClient.base64(EtcdClient.rangeEnd(of: prefix))
		let steps: [(String, [String: Any])] = [
			("/v3/auth/role/add", ["name": "root"]),
			("/v3/auth/user/add", ["name": "root", "password": "root-password"]),
			("/v3/auth/user/grant", ["user": "root", "role": "root"]),
			("/v3/auth/role/add", ["name": "syncing"]),
			(
				"/v3/auth/role/grant",
				[
					"name": "syncing",
					"perm": ["permType": permission, "key": EtcdClient.base64(prefix), "range_end": rangeEnd],
				]
			),
			("/v3/auth/user/add", ["name": user.user, "password": user.password]),
			("/v3/auth/user/grant", ["user": user.user, "role": "syncing"]),
			("/v3/auth/enable", [:]),
		]
		let url = URL(string: endpoint)!
		let transport = gatewayTransport(for: url)
		for (path, body) in steps {
			let reply = try await transport.send(
				GatewayRequest(
					url: url.appending(path: path), body: try JSONSerialization.data(withJSONObject: body), token: nil,
					timeout: 5))
			guard reply.status == 200 else {
				throw Defaults.RemoteServiceError.invalidResponse(
					"\(path): HTTP \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
			}
		}
	}

	/// How many watch streams etcd holds open now (its `etcd_debugging_mvcc_watch_stream_total` gauge).
	func watchStreamCount() async throws -> Int {
		let url = URL(string: endpoint)!.appending(path: "metrics")
		let (data, _) = try await URLSession.shared.data(from: url)
		let text = String(decoding: data, as: UTF8.self)
		guard
			let line = text.split(separator: "\n").first(where: {
				$0.hasPrefix("etcd_debugging_mvcc_watch_stream_total ")
			}), let value = Double(line.split(separator: " ").last ?? "")
		else {
			throw Defaults.RemoteServiceError.invalidResponse("no watch stream count in /metrics")
		}
		return Int(value)
	}
}
