import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// How each entry of `Fixtures/Foreign` and `Fixtures/Broken` was made, so that a missing entry can be recorded with
/// `DEFAULTS_RECORD_FIXTURES=1`. The files, not this table, are the contract: tests read the files, and existing
/// entries are never rewritten.
enum ContractFixtureSources {
	struct Entry: Sendable {
		let file: String
		let name: String
		let make: @Sendable () throws -> Any
	}

	/// JSON as other encoders write it: `JSONEncoder` with its default, unsorted key order.
	private static func json(_ text: String) -> Data { Data(text.utf8) }

	private static func archive(_ object: NSObject) throws -> Data {
		try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
	}

	static let entries: [Entry] = [
		// Codable as JSON Data, as several other Swift settings libraries store it.
		Entry(file: "Foreign/JSONData.plist", name: "window") { json(#"{"width":640,"height":480,"title":"Main"}"#) },
		Entry(file: "Foreign/JSONData.plist", name: "profile") { json(#"{"name":"Ada","tags":["admin","beta"]}"#) },
		Entry(file: "Foreign/JSONData.plist", name: "shape") { json(#"{"circle":{"radius":2}}"#) },
		Entry(file: "Foreign/JSONData.plist", name: "letter") { json(#""beta""#) },
		// Codable as JSON text, as the well-known Defaults package stores it: unsorted keys, escaped slashes.
		Entry(file: "Foreign/JSONText.plist", name: "window") { #"{"width":640,"height":480,"title":"Main"}"# },
		Entry(file: "Foreign/JSONText.plist", name: "mime") { #""application\/json""# },
		Entry(file: "Foreign/JSONText.plist", name: "tag") { #"{"name":"red"}"# },
		Entry(file: "Foreign/JSONText.plist", name: "url") { #""https:\/\/example.com\/a?b=1""# },
		// Raw values, as `@AppStorage` stores enums.
		Entry(file: "Foreign/RawValues.plist", name: "letter") { "beta" },
		Entry(file: "Foreign/RawValues.plist", name: "size") { 20 },
		Entry(file: "Foreign/RawValues.plist", name: "theme") { "dark" },
		// Keyed archives of `NSSecureCoding` objects.
		Entry(file: "Foreign/KeyedArchives.plist", name: "tag") { try archive(Tag(name: "red")) },
		Entry(file: "Foreign/KeyedArchives.plist", name: "bookmark") { try archive(Bookmark(path: "/tmp/notes")) },
		// JSON text that does not decode as a `Window`.
		Entry(file: "Broken/JSON.plist", name: "missingKey") { #"{"width":640,"title":"Main"}"# },
		Entry(file: "Broken/JSON.plist", name: "wrongType") { #"{"width":"wide","height":480,"title":"Main"}"# },
		Entry(file: "Broken/JSON.plist", name: "invalidJSON") { #"{"width":640,"height":"# },
		Entry(file: "Broken/JSON.plist", name: "garbageJSONData") { Data([0xFF, 0xFE, 0x00, 0x7B, 0x22]) },
		// Property-list values of the wrong type or range for their key.
		Entry(file: "Broken/Values.plist", name: "stringForInt") { "seven" },
		Entry(file: "Broken/Values.plist", name: "outOfRangeInt8") { 300 },
		Entry(file: "Broken/Values.plist", name: "rangeOutOfOrder") { [5, 1] },
		Entry(file: "Broken/Values.plist", name: "unknownRawValue") { "sepia" },
		// Data that is not a keyed archive of the key's class.
		Entry(file: "Broken/Archives.plist", name: "otherClass") { try archive(Tag(name: "red")) },
		Entry(file: "Broken/Archives.plist", name: "truncated") {
			let whole = try archive(Bookmark(path: "/tmp/notes"))
			return whole.prefix(whole.count / 2)
		},
		Entry(file: "Broken/Archives.plist", name: "garbage") {
			Data([0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x01, 0x02, 0x03])
		},
	]

	/// Every stored form of `file`, under its entry names.
	static func load(_ file: String) throws -> [String: Any] {
		try Fixtures.dictionary(file)
	}
}

@Suite struct ContractFixtureFileTests {
	@Test("Every foreign and broken fixture entry exists; DEFAULTS_RECORD_FIXTURES=1 records missing ones")
	func everyEntryExists() throws {
		for entry in ContractFixtureSources.entries {
			let existing = try? Fixtures.dictionary(entry.file)[entry.name]
			if existing != nil {
				continue
			}
			if Fixtures.isRecording {
				try Fixtures.record(
					try Defaults.PropertyList.normalize(try entry.make()), entry: entry.name, in: entry.file)
			} else {
				Issue.record("no entry \(entry.name) in Fixtures/\(entry.file); run with DEFAULTS_RECORD_FIXTURES=1")
			}
		}
	}

	@Test("Fixture files are XML property lists, readable in review")
	func filesAreXML() throws {
		for file in Set(ContractFixtureSources.entries.map(\.file)) {
			let text = try String(contentsOf: Fixtures.url(file), encoding: .utf8)
			#expect(text.hasPrefix("<?xml"), "\(file) is not XML")
		}
	}
}
