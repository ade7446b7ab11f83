import Foundation

/// The bytes a synced value travels as: a binary property list (`bplist00`) whose root is a one-entry dictionary,
/// `{"value": <stored form>}`, so that any stored form (also a bare string or number, which a property list cannot
/// hold at its root everywhere) travels unchanged. Dictionary keys are written sorted: the same value always gives
/// the same bytes. `Fixtures/Sync/` pins the form.
enum SyncedValueCoding {
	static let wrapperKey = "value"

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
