import Foundation

/// The bytes a synced value travels as: a binary property list (`bplist00`) whose root is a dictionary holding the
/// value, so that any stored form (also a bare string or number, which a property list cannot hold at its root
/// everywhere) travels unchanged. Dictionary keys are written sorted: the same value always gives the same bytes.
/// `Fixtures/Sync/WireForms.plist` pins both versions of the form and their removals.
///
/// - Version 1: `{"value": <stored form>}`; a removal is no bytes at all.
/// - Version 2: `{"by": <machine id>, "seq": <sequence>, "v": 2, "value": <stored form>}`; a removal is the same
///   without `value`. The mark (`by`, `seq`) says which machine pushed it and which of its changes it was, so that
///   a machine knows its own pushes when they come back, whatever their value. A reader of version 1 reads a
///   version-2 value as unreadable (its root has more than one entry): it keeps its local value and reports it.
///
/// A removal is stored as a *tombstone*, a key with no value, not deleted: etcd compares a key that does not exist as
/// revision 0, whatever removed it, so a compare-and-swap against "no key" could not tell the absence it saw from one
/// made since. A create sent again after a lost reply would then be stored a second time over another machine's
/// removal. A tombstone has a revision of its own, so every state of a key is one a compare-and-swap can name.
enum SyncedValueCoding {
	static let wrapperKey = "value"
	/// The newest version this package reads and writes.
	static let version = 2

	/// Which machine pushed a value (its id, kept in the sync state) and which of its changes it was.
	struct Mark: Equatable, Sendable {
		let machine: Data
		let sequence: Int
	}

	/// What remote bytes hold.
	enum Contents {
		case value(Any, mark: Mark?)
		case removal(mark: Mark?)
		/// Not a form this version reads (another program's bytes, or a newer version of the form).
		case unreadable
	}

	/// The bytes a version-1 removal leaves in the remote. Never a stored form: those are binary property lists.
	static let tombstone = Data()

	/// The bytes a push sends for `stored` (`nil`: removed); version 1 without a mark.
	static func pushedBytes(of stored: Any?, mark: Mark? = nil) throws -> Data {
		guard let mark else {
			return try stored.map { try encode($0) } ?? tombstone
		}
		var root: [String: Any] = ["by": mark.machine, "seq": mark.sequence, "v": version]
		root[wrapperKey] = stored
		return try binaryPropertyList(of: root)
	}

	/// Whether remote bytes (`nil`: no key) hold no value: no key, or a removal's tombstone of either version.
	static func isRemoval(_ bytes: Data?) -> Bool {
		switch bytes.map(contents(of:)) {
		case .removal?, nil: true
		case .value?, .unreadable?: false
		}
	}

	static func encode(_ stored: Any) throws -> Data {
		try binaryPropertyList(of: [wrapperKey: stored])
	}

	/// The stored form inside `data`, or `nil` when the bytes are not a value of a version this package reads.
	static func decode(_ data: Data) -> Any? {
		if case .value(let value, _) = contents(of: data) {
			return value
		}
		return nil
	}

	/// The mark `data` carries, if it is of version 2.
	static func mark(of data: Data?) -> Mark? {
		switch data.map(contents(of:)) {
		case .value(_, let mark)?, .removal(let mark)?: mark
		case .unreadable?, nil: nil
		}
	}

	static func contents(of data: Data) -> Contents {
		guard !data.isEmpty else {
			return .removal(mark: nil)
		}
		guard let root = value(ofBinaryPropertyList: data) as? [String: Any] else {
			return .unreadable
		}
		guard let version = root["v"] else {
			guard root.count == 1, let value = root[wrapperKey] else {
				return .unreadable
			}
			return .value(value, mark: nil)
		}
		guard version as? Int == 2, let machine = root["by"] as? Data, let sequence = root["seq"] as? Int,
			Set(root.keys).isSubset(of: ["by", "seq", "v", wrapperKey])
		else {
			return .unreadable
		}
		let mark = Mark(machine: machine, sequence: sequence)
		return root[wrapperKey].map { .value($0, mark: mark) } ?? .removal(mark: mark)
	}
}
