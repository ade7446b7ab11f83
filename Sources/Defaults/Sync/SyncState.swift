import Foundation

/// What a machine last agreed with the remote on, per key: the offline queue is the difference between this and the
/// local store, so it survives exits and restarts with the state file, which is written atomically after each change.
struct SyncState: Codable, Equatable {
	struct Record: Codable, Equatable {
		/// The remote's bytes for the key (`nil`: the key does not exist remotely).
		var value: Data?
		/// The key's mod revision on the remote (0: never existed).
		var modRevision: Int64
		/// When the remote value did not decode and was left alone: the local stored form at that time, encoded;
		/// the key is pending only once the local value moves away from it.
		var keptLocalValue: Data?
		var isUnreadable: Bool = false
		/// When the remote refused the local value (too large): `keptLocalValue` is that value, and `value` and
		/// `modRevision` the remote's record at the time. Optional, so that older state files still decode.
		var isHeldLocally: Bool? = nil
	}

	/// The remote revision everything up to which has been applied; the watch resumes after it.
	var revision: Int64 = 0
	var records: [String: Record] = [:]

	static func load(from url: URL?) -> SyncState {
		guard let url, let data = try? Data(contentsOf: url),
			let state = try? JSONDecoder().decode(SyncState.self, from: data)
		else {
			return SyncState()
		}
		return state
	}

	func save(to url: URL?) {
		guard let url, let data = try? JSONEncoder().encode(self) else {
			return
		}
		try? data.write(to: url, options: .atomic)
	}

	/// The stored form the local store holds if nothing changed locally since the last agreement.
	func agreedLocalValue(forKey name: String) -> Any? {
		guard let record = records[name] else {
			return nil
		}
		let bytes = record.isUnreadable || record.isHeldLocally == true ? record.keptLocalValue : record.value
		return bytes.flatMap(SyncedValueCoding.decode)
	}
}
