import Foundation

#if canImport(FoundationNetworking)
	import FoundationNetworking
#endif

/// The gateway calls the benchmarks make to etcd themselves, beside the engines: whether etcd answers, another
/// machine's write, whether a key is there. The package's `EtcdClient` keeps its etcd calls to the package.
struct EtcdGateway: Sendable {
	let endpoint: String

	/// Writes `value` for `key`, as another machine would.
	func put(_ key: String, _ value: Data) async throws {
		_ = try await call("put", ["key": Data(key.utf8).base64EncodedString(), "value": value.base64EncodedString()])
	}

	/// Whether `key` exists; throws when etcd does not answer.
	func exists(_ key: String) async throws -> Bool {
		let reply = try await call("range", ["key": Data(key.utf8).base64EncodedString()])
		return (reply["kvs"] as? [Any])?.isEmpty == false
	}

	private func call(_ method: String, _ body: [String: String]) async throws -> [String: Any] {
		var request = URLRequest(url: URL(string: "\(endpoint)/v3/kv/\(method)")!)
		request.httpMethod = "POST"
		request.httpBody = try JSONSerialization.data(withJSONObject: body)
		let (data, response) = try await URLSession.shared.data(for: request)
		guard (response as? HTTPURLResponse)?.statusCode == 200,
			let reply = try JSONSerialization.jsonObject(with: data) as? [String: Any]
		else {
			throw URLError(.badServerResponse)
		}
		return reply
	}
}
