import Defaults

// What `write` stores, from what is stored now: the one place where `-array-add` and `-dict-add` meet the current
// value, inside the update that reads and writes it under the file's lock.
extension WriteRequest {
	/// The value to store for `key` when `current` is stored now (`nil`: nothing is).
	func value(adding current: Any?, key: String, domain: String) throws(ToolError) -> Any {
		switch self {
		case .set(let newValue):
			return newValue
		case .appendToArray(let elements):
			guard let array = (current ?? [Any]()) as? [Any] else {
				throw .badValue(
					"The value of \(key) in \(domain) is a \(Defaults.PropertyList.typeName(of: current!)), not an "
						+ "array; nothing was written.")
			}
			return array + elements
		case .addToDictionary(let entries):
			guard let dictionary = (current ?? [String: Any]()) as? [String: Any] else {
				throw .badValue(
					"The value of \(key) in \(domain) is a \(Defaults.PropertyList.typeName(of: current!)), not a "
						+ "dictionary; nothing was written.")
			}
			return dictionary.merging(entries) { _, new in new }
		}
	}
}
