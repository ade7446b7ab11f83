import Defaults
import Foundation

/// The golden stored forms in `Fixtures/`, read as property lists.
enum Fixtures {
	/// The repository's `Fixtures` folder, found from this source file so that it works from any build folder.
	static let folder = URL(fileURLWithPath: #filePath)
		.deletingLastPathComponent()  // Support
		.deletingLastPathComponent()  // DefaultsTests
		.deletingLastPathComponent()  // Tests
		.deletingLastPathComponent()  // repository
		.appendingPathComponent("Fixtures")

	/// Set `DEFAULTS_RECORD_FIXTURES=1` to write missing fixture entries from the current stored forms instead of
	/// failing. Review the diff: a changed stored form is a breaking change.
	static let isRecording = ProcessInfo.processInfo.environment["DEFAULTS_RECORD_FIXTURES"] == "1"

	static func url(_ path: String) -> URL {
		folder.appendingPathComponent(path)
	}

	/// The property-list dictionary in `Fixtures/<path>`, normalised.
	static func dictionary(_ path: String) throws -> [String: Any] {
		let data = try Data(contentsOf: url(path))
		let plist = try PropertyListSerialization.propertyList(from: data, format: nil)
		return try Defaults.PropertyList.normalize(plist) as? [String: Any] ?? [:]
	}

	/// Adds `value` under `entry` in the fixture file at `path`, as an XML property list.
	static func record(_ value: Any, entry: String, in path: String) throws {
		var dictionary = (try? self.dictionary(path)) ?? [:]
		dictionary[entry] = value
		let data = try PropertyListSerialization.data(fromPropertyList: dictionary, format: .xml, options: 0)
		try FileManager.default.createDirectory(
			at: url(path).deletingLastPathComponent(), withIntermediateDirectories: true)
		try data.write(to: url(path))
	}

	/// Whether two stored forms are the same, as snapshots compare them: keyed archives by their contents, not their
	/// bytes.
	static func isSame(_ lhs: Any, _ rhs: Any) -> Bool {
		Defaults.Snapshot.isSameStoredForm(lhs, rhs)
	}
}
