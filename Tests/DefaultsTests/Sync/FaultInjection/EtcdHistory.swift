import Foundation

/// Every change etcd made under a prefix, in etcd's order, from the prefix read at each revision since 1 (the cluster
/// never compacts: etcd compacts only when asked, and `--auto-compaction-retention` stays 0).
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

	/// Reads the history up to `revision` from the first of `endpoints` that serves it (a member restarted a moment
	/// ago may still be catching up).
	static func read(anyOf endpoints: [String], prefix: String, upTo revision: Int64) async throws -> EtcdHistory {
		var failures: [String] = []
		for endpoint in endpoints {
			do {
				return try await read(endpoint, prefix: prefix, upTo: revision)
			} catch {
				failures.append("\(endpoint): \(error)")
			}
		}
		throw Unreadable(description: failures.joined(separator: "; "))
	}

	/// Reads the prefix at every revision from 1 to `revision` (a range per revision, a hundred per `curl`, over one
	/// connection) and makes the events from the differences: exact, and with no stream to wait on.
	static func read(_ endpoint: String, prefix: String, upTo revision: Int64) async throws -> EtcdHistory {
		var events: [Event] = []
		var previous: [String: (value: String?, modRevision: Int64)] = [:]
		var first: Int64 = 1
		while first <= revision {
			let last = min(first + 99, revision)
			let states = try await ranges(endpoint, prefix: prefix, revisions: first...last)
			for (offset, state) in states.enumerated() {
				let at = first + Int64(offset)
				for (name, entry) in state.sorted(by: { $0.key < $1.key })
				where previous[name]?.modRevision != entry.modRevision {
					events.append(Event(revision: at, name: name, value: entry.value))
				}
				// Deleted, rather than left as a tombstone (a removal of this package's, an event above).
				for name in previous.keys.sorted() where state[name] == nil && previous[name]?.value != nil {
					events.append(Event(revision: at, name: name, value: nil))
				}
				previous = state
			}
			first = last + 1
		}
		return EtcdHistory(events: events)
	}

	private static func ranges(
		_ endpoint: String, prefix: String, revisions: ClosedRange<Int64>
	) async throws
		-> [[String: (value: String?, modRevision: Int64)]]
	{
		var arguments = ["-s", "--max-time", "20"]
		for (index, revision) in revisions.enumerated() {
			let request: [String: Any] = [
				"key": EtcdGateway.base64(prefix), "range_end": EtcdGateway.rangeEnd(of: prefix),
				"revision": String(revision),
			]
			let body = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
			arguments +=
				(index == 0 ? [] : ["--next", "-s"]) + [
					"-w", "\\n", "-X", "POST", endpoint + "/v3/kv/range", "-d", body,
				]
		}
		let result = try await ChildProcess.run(arguments, executable: try EtcdGateway.curl, timeout: 30)
		let lines = result.standardOutput.split(separator: "\n")
		guard lines.count == revisions.count else {
			throw Unreadable(
				description: "\(lines.count) answers to \(revisions.count) reads of revisions \(revisions): \(result)")
		}
		return try lines.map { line in
			guard let answer = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
				answer["header"] != nil
			else {
				throw Unreadable(description: "etcd answered a read of the history with \(line)")
			}
			var state: [String: (value: String?, modRevision: Int64)] = [:]
			for entry in answer["kvs"] as? [[String: Any]] ?? [] {
				let key = (entry["key"] as? String).flatMap { Data(base64Encoded: $0) }.map {
					String(decoding: $0, as: UTF8.self)
				}
				guard let key, key.hasPrefix(prefix), let modRevision = EtcdGateway.integer(entry["mod_revision"])
				else {
					throw Unreadable(description: "an entry the checker cannot read: \(entry)")
				}
				if EtcdGateway.isAtomicUpdateMark(key) {
					continue
				}
				state[String(key.dropFirst(prefix.count))] = (
					EtcdGateway.syncedString(entry["value"] as? String), modRevision
				)
			}
			return state
		}
	}
}
