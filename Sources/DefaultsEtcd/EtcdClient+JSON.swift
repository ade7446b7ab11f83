import Defaults
import Foundation

// etcd's gateway speaks JSON with base64 keys and values and 64-bit integers as strings.
extension EtcdClient {
	static func base64(_ text: String) -> String {
		Data(text.utf8).base64EncodedString()
	}

	/// The first key after every key that starts with `prefix`: etcd's way of asking for a prefix.
	static func rangeEnd(of prefix: String) -> String {
		var bytes = Array(prefix.utf8)
		while let last = bytes.last {
			if last < 0xFF {
				bytes[bytes.count - 1] = last + 1
				return String(decoding: bytes, as: UTF8.self)
			}
			bytes.removeLast()
		}
		return "\0"
	}

	/// etcd's gateway writes 64-bit integers as strings and leaves out zero values.
	static func int64(_ value: Any?) -> Int64 {
		switch value {
		case let text as String: Int64(text) ?? 0
		case let number as NSNumber: number.int64Value
		default: 0
		}
	}

	static func revision(of answer: [String: Any]) -> Int64 {
		int64((answer["header"] as? [String: Any])?["revision"])
	}

	static func entry(_ kv: [String: Any]) throws -> Defaults.RemoteEntry {
		guard let key = (kv["key"] as? String).flatMap({ Data(base64Encoded: $0) }) else {
			throw Defaults.RemoteServiceError.invalidResponse(
				"a key-value whose key is missing or not base64: \(String(describing: kv["key"] ?? "none").prefix(80))")
		}
		let name = String(decoding: key, as: UTF8.self)
		guard let value = (kv["value"] as? String).map({ Data(base64Encoded: $0) }) ?? Data() else {
			throw Defaults.RemoteServiceError.invalidResponse("the value of \(name) is not base64")
		}
		// A revision below 1 would make the key unwritable (a compare-and-swap against it never matches) and could
		// move the watch's resume point: refused.
		let modRevision = int64(kv["mod_revision"])
		guard modRevision > 0 else {
			throw Defaults.RemoteServiceError.invalidResponse("\(name) has the revision \(modRevision)")
		}
		return Defaults.RemoteEntry(key: name, value: value, modRevision: modRevision)
	}
}
