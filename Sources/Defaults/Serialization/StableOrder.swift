import Foundation

/// The order the set bridges write elements in, so that equal sets always have equal stored forms (and fixtures
/// that do not change by accident).
enum StableOrder {
	/// Sorts the stored forms of a set's elements, so that the same set is always written the same way: strings
	/// and numbers in their natural order, anything else by a canonical text of its form.
	static func sorted(_ elements: [Any]) -> [Any] {
		if let strings = elements as? [String] {
			return strings.sorted()
		}
		if let integers = elements as? [Int] {
			return integers.sorted()
		}
		if let reals = elements as? [Double] {
			return reals.sorted()
		}
		return elements.map { (canonicalText($0), $0) }.sorted { $0.0 < $1.0 }.map(\.1)
	}

	/// A text that is the same for equal normalised values: dictionary keys sorted, every value tagged with its
	/// type.
	static func canonicalText(_ value: Any) -> String {
		switch value {
		case let value as Bool: "b:\(value)"
		case let value as Int: "i:\(value)"
		case let value as UInt64: "i:\(value)"
		case let value as Double: "r:\(value)"
		case let value as String: "s:\(value.debugDescription)"
		case let value as Data: "d:\(value.base64EncodedString())"
		case let value as Date: "t:\(value.timeIntervalSinceReferenceDate)"
		case let value as [Any]: "a:[" + value.map(canonicalText).joined(separator: ",") + "]"
		case let value as [String: Any]:
			"d:{"
				+ value.keys.sorted().map { "\($0.debugDescription):\(canonicalText(value[$0]!))" }
				.joined(separator: ",") + "}"
		default: "?:\(value)"
		}
	}
}
