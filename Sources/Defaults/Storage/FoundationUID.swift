import Foundation

/// The object references inside keyed archives, as Foundation's property-list parser hands them out: an opaque
/// object with no public API. Storage meets them when it reads a property list that holds an archive's structure.
enum FoundationUID {
	/// The number inside Foundation's opaque keyed-archiver UID object, which has no public API.
	static func value(_ value: Any) -> Int? {
		guard String(describing: type(of: value)).contains("KeyedArchiverUID") else {
			return nil
		}
		for child in Mirror(reflecting: value).children where child.label == "value" {
			switch child.value {
			case let number as UInt32: return Int(number)
			case let number as Int: return number
			default: break
			}
		}
		// Apple describes it as `<CFKeyedArchiverUID 0x…>{value = 1}`.
		let description = String(describing: value)
		guard let range = description.range(of: "value = ") else {
			return nil
		}
		return Int(description[range.upperBound...].prefix { $0.isNumber })
	}
}
