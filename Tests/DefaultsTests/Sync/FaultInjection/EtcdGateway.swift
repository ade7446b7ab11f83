import Foundation

/// etcd's HTTP/JSON gateway as the fault-injection suite reads it: through `curl`, a client independent of the
/// package's own, so that a defect in `DefaultsEtcd` cannot hide itself from the checker.
///
/// ```swift
/// let status = EtcdGateway.call("http://127.0.0.1:2379", "/v3/maintenance/status", [:])
/// ```
enum EtcdGateway {
	struct CurlMissing: Error, CustomStringConvertible {
		var description: String { "the fault-injection suite reads etcd with curl; /usr/bin/curl is missing" }
	}

	static var curl: String {
		get throws {
			guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else {
				throw CurlMissing()
			}
			return "/usr/bin/curl"
		}
	}

	/// One request; `nil` when the member does not answer within `timeout` seconds or answers with something else
	/// than a JSON object.
	static func call(
		_ endpoint: String, _ path: String, _ body: [String: Any], timeout: Double = 1
	) async -> [String: Any]? {
		guard let data = try? JSONSerialization.data(withJSONObject: body), let curl = try? curl,
			let result = try? await ChildProcess.run(
				[
					"-s", "--max-time", "\(timeout)", "-X", "POST", endpoint + path, "-d",
					String(decoding: data, as: UTF8.self),
				],
				executable: curl, timeout: timeout + 5)
		else {
			return nil
		}
		return (try? JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8))) as? [String: Any]
	}

	static func base64(_ text: String) -> String {
		Data(text.utf8).base64EncodedString()
	}

	/// The key just past every key starting with `prefix`.
	static func rangeEnd(of prefix: String) -> String {
		var bytes = Array(prefix.utf8)
		bytes[bytes.count - 1] += 1
		return Data(bytes).base64EncodedString()
	}

	static func integer(_ value: Any?) -> Int64? {
		if let text = value as? String {
			return Int64(text)
		}
		return (value as? NSNumber)?.int64Value
	}

	/// The string value a machine synced, from etcd's bytes (a binary property list `{"value": <stored form>}`, marked or not), the
	/// raw bytes described when it is something else, or `nil` for a removal's tombstone (no bytes, which the gateway
	/// leaves out).
	static func syncedString(_ base64: String?) -> String? {
		guard let data = Data(base64Encoded: base64 ?? "") else {
			return "<not base64: \(base64 ?? "")>"
		}
		if data.isEmpty {
			return nil
		}
		if let wrapper = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] {
			if let value = wrapper["value"] as? String {
				return value
			}
			// A counter's history, read by the tests of processes sharing a settings file.
			if let value = wrapper["value"] as? Int {
				return String(value)
			}
			// A marked removal (the second wire form, `{by, seq, v}`).
			if wrapper["v"] != nil, wrapper["value"] == nil {
				return nil
			}
		}
		return "<not a synced string: \(data.count) bytes>"
	}

	/// The current values under `prefix` (names without the prefix) and the revision they were read at.
	static func state(_ endpoint: String, prefix: String) async -> (values: [String: String], revision: Int64)? {
		guard
			let answer = await call(
				endpoint, "/v3/kv/range", ["key": base64(prefix), "range_end": rangeEnd(of: prefix)], timeout: 2),
			let header = answer["header"] as? [String: Any], let revision = integer(header["revision"])
		else {
			return nil
		}
		return (values(in: answer, prefix: prefix), revision)
	}

	/// Where etcd's members disagree on the keys under `prefix` at `revision`, described; `nil` when every member that
	/// answers holds the same. The members of one cluster always agree on a revision, unless etcd itself lost an
	/// applied write on a crash: etcd 3.5.0 to 3.5.2 do (the consistent index was not saved atomically with the data,
	/// etcd-io/etcd#13766, fixed in 3.5.3), and a machine that watches such a member sees another history.
	static func memberDisagreement(_ endpoints: [String], prefix: String, at revision: Int64) async -> String? {
		var views: [(endpoint: String, values: [String: String])] = []
		for endpoint in endpoints {
			let request: [String: Any] = [
				"key": base64(prefix), "range_end": rangeEnd(of: prefix), "revision": String(revision),
			]
			guard let answer = await call(endpoint, "/v3/kv/range", request, timeout: 2), answer["header"] != nil else {
				continue
			}
			views.append((endpoint, values(in: answer, prefix: prefix)))
		}
		guard let first = views.first, let other = views.first(where: { $0.values != first.values }) else {
			return nil
		}
		let differing = Set(first.values.keys).union(other.values.keys).filter { first.values[$0] != other.values[$0] }
		let detail = differing.sorted().map { "\($0): \(first.values[$0] ?? "-") / \(other.values[$0] ?? "-")" }
		return "etcd's members disagree at revision \(revision) (\(first.endpoint) / \(other.endpoint)): "
			+ detail.joined(separator: ", ")
	}

	/// Whether `key` is the update record an atomic update's commit writes beside the first key it updates
	/// (`<prefix><name>/.defaults-update/<machine id in hex>`, see `AtomicUpdateLoop.Record`): bookkeeping of the
	/// engine, not a value a machine holds, so the checks leave it out (the counters' histories show what the commits
	/// did). The prefix's epoch key is bookkeeping too.
	static func isAtomicUpdateMark(_ key: String) -> Bool {
		key.contains("/.defaults-update/") || key.hasSuffix("/.defaults-epoch")
	}

	/// The synced values of a range answer's keys under `prefix`, by name without the prefix.
	private static func values(in answer: [String: Any], prefix: String) -> [String: String] {
		var values: [String: String] = [:]
		for entry in answer["kvs"] as? [[String: Any]] ?? [] {
			let key = (entry["key"] as? String).flatMap { Data(base64Encoded: $0) }.map {
				String(decoding: $0, as: UTF8.self)
			}
			if let key, key.hasPrefix(prefix), !isAtomicUpdateMark(key),
				let value = syncedString(entry["value"] as? String)
			{
				values[String(key.dropFirst(prefix.count))] = value
			}
		}
		return values
	}

	/// ``state(_:prefix:)`` from the first of `endpoints` that answers. (A loop: a lazy `compactMap(…).first` calls
	/// its closure twice, and a member that answers once and not the second time would trap it.)
	static func state(anyOf endpoints: [String], prefix: String) async -> (values: [String: String], revision: Int64)? {
		for endpoint in endpoints {
			if let state = await state(endpoint, prefix: prefix) {
				return state
			}
		}
		return nil
	}
}
