import Foundation

/// Every change etcd made under a prefix, in etcd's order: a watch from revision 1 (the cluster never compacts: etcd
/// compacts only when asked, and `--auto-compaction-retention` stays 0).
struct EtcdHistory {
	struct Event: Equatable, CustomStringConvertible {
		let revision: Int64
		/// The name without the prefix.
		let name: String
		/// `nil` for a deletion.
		let value: String?

		var description: String { "@\(revision) \(name)=\(value ?? "-")" }
	}

	struct Unreadable: Error, CustomStringConvertible {
		let description: String
	}

	let events: [Event]

	/// The events of one name, oldest first.
	func events(of name: String) -> [Event] {
		events.filter { $0.name == name }
	}

	/// The values the history ends on.
	var finalValues: [String: String] {
		var values: [String: String] = [:]
		for event in events {
			values[event.name] = event.value
		}
		return values
	}

	/// Reads the history up to `revision` from the first of `endpoints` that delivers it, within `timeout` seconds
	/// each (a member restarted a moment ago may still be catching up).
	static func read(
		anyOf endpoints: [String], prefix: String, upTo revision: Int64, timeout: Double = 5
	)
		async throws -> EtcdHistory
	{
		var failures: [String] = []
		for endpoint in endpoints {
			do {
				return try await read(endpoint, prefix: prefix, upTo: revision, timeout: timeout)
			} catch {
				failures.append("\(endpoint): \(error)")
			}
		}
		throw Unreadable(description: failures.joined(separator: "; "))
	}

	/// Reads the history up to `revision` from `endpoint`, within `timeout` seconds.
	static func read(
		_ endpoint: String, prefix: String, upTo revision: Int64, timeout: Double = 10
	) async throws
		-> EtcdHistory
	{
		let request: [String: Any] = [
			"create_request": [
				"key": EtcdGateway.base64(prefix), "range_end": EtcdGateway.rangeEnd(of: prefix), "start_revision": "1",
			]
		]
		let body = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
		let curl = try ChildProcess(
			["-s", "-N", "--max-time", "\(timeout)", "-X", "POST", endpoint + "/v3/watch", "-d", body],
			executable: try EtcdGateway.curl)
		defer {
			curl.kill()
			_ = try? curl.wait(timeout: 5)
		}
		let deadline = Date().addingTimeInterval(timeout)
		while Date() < deadline {
			let events = try parse(curl.standardOutputSoFar, prefix: prefix)
			if events.last?.revision ?? 0 >= revision || (revision <= 1 && curl.standardOutputSoFar.contains("created"))
			{
				return EtcdHistory(events: events.filter { $0.revision <= revision })
			}
			try await Task.sleep(for: .milliseconds(50))
		}
		let arrived = (try? parse(curl.standardOutputSoFar, prefix: prefix))?.last?.revision ?? 0
		throw Unreadable(
			description: "etcd's history up to \(revision) did not arrive within \(timeout) s (up to \(arrived) did; "
				+ "curl wrote \(curl.standardOutputSoFar.count) bytes, \(curl.standardErrorSoFar))")
	}

	/// The gateway streams one JSON object per line, `{"result": {"events": [{"type"?, "kv": {…}}]}}`.
	private static func parse(_ output: String, prefix: String) throws -> [Event] {
		var events: [Event] = []
		for line in output.split(separator: "\n") {
			guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
				// The line still arriving.
				continue
			}
			if let error = object["error"] {
				throw Unreadable(description: "etcd refused the history watch: \(error)")
			}
			let result = object["result"] as? [String: Any] ?? [:]
			for event in result["events"] as? [[String: Any]] ?? [] {
				let kv = event["kv"] as? [String: Any] ?? [:]
				let key = (kv["key"] as? String).flatMap { Data(base64Encoded: $0) }.map {
					String(decoding: $0, as: UTF8.self)
				}
				guard let key, key.hasPrefix(prefix), let revision = EtcdGateway.integer(kv["mod_revision"]) else {
					throw Unreadable(description: "an event the checker cannot read: \(event)")
				}
				let isDeletion = event["type"] as? String == "DELETE"
				events.append(
					Event(
						revision: revision, name: String(key.dropFirst(prefix.count)),
						value: isDeletion ? nil : EtcdGateway.syncedString(kv["value"] as? String)))
			}
		}
		return events
	}
}
