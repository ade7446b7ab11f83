import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// The schema file's format, pinned in `Fixtures/Schema/`: the `defaults` command of a later version reads the schema
/// an app of an earlier one wrote, so a change to what is written is a change of format and needs a new version.
@Suite struct SchemaFileFixtureTests {
	static let version2 = "Schema/Version2.plist"
	static let version1 = "Schema/Version1.plist"

	/// One entry of each kind the format can say: every input, element inputs, every shape, defaults of every
	/// property-list type, a computed default, a synced and a locked key.
	static let entries: [SchemaFile.Entry] = [
		.init(
			name: "homepage", type: "URL", bridge: "URLBridge", input: .url,
			shape: .jsonText(.string), storedDefault: #""https:\/\/example.com""#, hasDynamicDefault: false,
			isSynced: true, isLocked: false),
		.init(
			name: "count", type: "Int", bridge: "IntBridge", input: .integer, shape: .integer, storedDefault: 3,
			hasDynamicDefault: false, isSynced: false, isLocked: true),
		.init(
			name: "ratio", type: "Double", bridge: "DoubleBridge", input: .real, shape: .real, storedDefault: 0.5,
			hasDynamicDefault: false, isSynced: false, isLocked: false),
		.init(
			name: "enabled", type: "Bool", bridge: "BoolBridge", input: .boolean, shape: .boolean,
			storedDefault: true, hasDynamicDefault: false, isSynced: false, isLocked: false),
		.init(
			name: "since", type: "Date", bridge: "DateBridge", input: .date, shape: .date,
			storedDefault: Date(timeIntervalSinceReferenceDate: 0), hasDynamicDefault: false, isSynced: false,
			isLocked: false),
		.init(
			name: "token", type: "Data", bridge: "DataBridge", input: .data, shape: .data,
			storedDefault: Data([1, 2, 3]), hasDynamicDefault: false, isSynced: false, isLocked: false),
		.init(
			name: "id", type: "Optional<UUID>", bridge: "OptionalBridge<UUIDBridge>", input: .uuid,
			storedDefault: nil, hasDynamicDefault: false, isSynced: false, isLocked: false),
		.init(
			name: "name", type: "String", bridge: "StringBridge", input: .string, shape: .string,
			storedDefault: nil, hasDynamicDefault: true, isSynced: false, isLocked: false),
		.init(
			name: "tags", type: "Array<String>", bridge: "ArrayBridge<StringBridge>", input: nil,
			elementInput: .string, shape: .array(.string), storedDefault: ["a"], hasDynamicDefault: false,
			isSynced: false, isLocked: false),
		.init(
			name: "limits", type: "Dictionary<String, Int>", bridge: "DictionaryBridge<IntBridge>", input: nil,
			elementInput: .integer, shape: .map(.integer), storedDefault: ["a": 1], hasDynamicDefault: false,
			isSynced: false, isLocked: false),
		.init(
			name: "window", type: "Window", bridge: "TopLevelCodableBridge<Window>", input: nil,
			shape: .jsonText(
				.record([
					"width": .init(shape: .number, isRequired: true),
					"title": .init(shape: .string, isRequired: false),
					"panes": .init(shape: .array(.map(.boolean)), isRequired: true),
				])),
			storedDefault: #"{"panes":[],"width":1}"#, hasDynamicDefault: false, isSynced: false, isLocked: false),
	]

	/// What this version writes is what the fixture holds, entry by entry.
	@Test func theVersion2FormatIsPinned() throws {
		let written = try PropertyListSerialization.propertyList(
			from: SchemaFile(entries: Self.entries).data(), format: nil)
		if Fixtures.isRecording, (try? Fixtures.dictionary(Self.version2)) == nil {
			let top = try #require(written as? [String: Any])
			for (field, value) in top {
				try Fixtures.record(value, entry: field, in: Self.version2)
			}
		}
		let pinned = try Fixtures.dictionary(Self.version2)
		let current = try #require(Defaults.PropertyList.normalize(written) as? [String: Any])
		#expect(pinned["format"] as? String == "Defaults schema")
		#expect(pinned["version"] as? Int == 2)
		#expect(Set(current.keys) == Set(pinned.keys))
		let pinnedKeys = try #require(pinned["keys"] as? [String: Any])
		let currentKeys = try #require(current["keys"] as? [String: Any])
		#expect(Set(currentKeys.keys) == Set(pinnedKeys.keys))
		for (name, fields) in pinnedKeys {
			#expect(Fixtures.isSame(try #require(currentKeys[name]), fields), "the key \(name) is written as pinned")
		}
	}

	/// The pinned files read back as the entries they were written from: a file of this version, and one of version
	/// 1 (written before shapes and element inputs), which reads without them.
	@Test func thePinnedFilesRead() throws {
		let version2 = try SchemaFile(contentsOf: Fixtures.url(Self.version2))
		#expect(version2.entries == SchemaFile(entries: Self.entries).entries)

		let version1 = try SchemaFile(contentsOf: Fixtures.url(Self.version1))
		#expect(version1.entries.map(\.name) == ["count", "homepage", "name"])
		#expect(version1.entry(named: "count")?.input == .integer)
		#expect(version1.entry(named: "count")?.storedDefault?.value as? Int == 3)
		#expect(version1.entry(named: "count")?.isLocked == true)
		#expect(version1.entry(named: "homepage")?.isSynced == true)
		#expect(version1.entry(named: "name")?.hasDynamicDefault == true)
		#expect(version1.entries.allSatisfy { $0.shape == nil && $0.elementInput == nil })
	}
}
