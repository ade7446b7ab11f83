import Foundation

/// The bytes a synced value travels as: a binary property list (`bplist00`) whose root is a one-entry dictionary,
/// `{"value": <stored form>}`, so that any stored form (also a bare string or number, which a property list cannot
/// hold at its root everywhere) travels unchanged. Dictionary keys are written sorted: the same value always gives
/// the same bytes. `Fixtures/Sync/WireForms.plist` pins the form, and the tombstone below.
///
/// A removal is stored as a *tombstone*, a key with no bytes, not deleted: etcd compares a key that does not exist as
/// revision 0, whatever removed it, so a compare-and-swap against "no key" could not tell the absence it saw from one
/// made since. A create sent again after a lost reply would then be stored a second time over another machine's
/// removal. A tombstone has a revision of its own, so every state of a key is one a compare-and-swap can name.
enum SyncedValueCoding {
	static let wrapperKey = "value"

	/// The bytes a removal leaves in the remote. Never a stored form: those are binary property lists.
	static let tombstone = Data()

	/// The bytes a push sends for `stored` (`nil`: removed).
	static func pushedBytes(of stored: Any?) throws -> Data {
		try stored.map { try encode($0) } ?? tombstone
	}

	/// Whether remote bytes (`nil`: no key) hold no value: no key, or a removal's tombstone.
	static func isRemoval(_ bytes: Data?) -> Bool {
		bytes?.isEmpty ?? true
	}

	static func encode(_ stored: Any) throws -> Data {
		try binaryPropertyList(of: [wrapperKey: stored])
	}

	/// The stored form inside `data`, or `nil` when the bytes are not that wrapper.
	static func decode(_ data: Data) -> Any? {
		guard let root = value(ofBinaryPropertyList: data) as? [String: Any], root.count == 1,
			let value = root[wrapperKey]
		else {
			return nil
		}
		return value
	}
}
