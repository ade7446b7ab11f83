import Foundation

/// The order the set bridges write elements in, so that equal sets always have equal stored forms (and fixtures
/// that do not change by accident).
enum StableOrder {
	/// Sorts the stored forms of a set's elements, so that the same set is always written the same way: strings
	/// and numbers in their natural order, anything else by the tagged text of its form, which is
	/// the same exactly for equal forms.
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
		let tagged = Defaults.PropertyList.Printer(.tagged)
		return elements.map { (tagged.text(of: $0), $0) }.sorted { $0.0 < $1.0 }.map(\.1)
	}
}
