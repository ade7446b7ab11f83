import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// An app lists its keys once in a catalog: it describes each, writes a schema the `defaults` command reads, and a
/// test finds a key the catalog misses.
@Suite struct CatalogTests {
	@Test func aCatalogDescribesEachKey() throws {
		let store = Defaults.InMemoryStore()
		let homepage = Defaults.Key<URL>("homepage", default: URL(string: "https://example.com")!, suite: store)
		let name = Defaults.Key<String?>("name", suite: store)
		let prices = Defaults.Key<[Money]>(
			"prices", default: [Money(cents: 1, currency: "EUR")], suite: store,
			bridge: .array(of: StoredFormSample.moneyV2))
		let host = Defaults.Key<String>("host", suite: store) { "computed" }
		let entries = Defaults.Catalog([homepage, name, prices, host]).entries

		#expect(entries.map(\.name) == ["homepage", "name", "prices", "host"], "the catalog's order")
		#expect(entries[0].valueType == "URL")
		#expect(entries[0].storedDefault as? String == #""https:\/\/example.com""#, "the URL bridge's JSON text")
		#expect(entries[1].valueType == "Optional<String>")
		#expect(entries[1].storedDefault == nil)
		#expect(entries[2].bridgeName == "array of MoneyBridgeV2")
		#expect(
			Fixtures.isSame(try #require(entries[2].storedDefault), [["cents": 1, "currency": "EUR"]]))
		#expect(entries[3].storedDefault == nil, "a computed default is not run for a description")
		#expect(entries.allSatisfy { !$0.isSynced && !$0.isLocked })
	}

	@Test func theSchemaRoundTripsThroughItsFile() throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.InMemoryStore()
		let keys: [Defaults.Keys] = [
			Defaults.Key<URL>("homepage", default: URL(string: "https://example.com")!, suite: store),
			Defaults.Key<Int>("count", default: 3, suite: store),
			Defaults.Key<Date>("since", default: Date(timeIntervalSinceReferenceDate: 0), suite: store),
			Defaults.Key<Window>("window", default: Window(width: 1, height: 2, title: "t"), suite: store),
			Defaults.Key<UUID?>("id", suite: store),
			Defaults.Key<Letter>("letter", default: .alpha, suite: store, bridge: .rawValue),
		]
		let catalog = Defaults.Catalog(keys)
		let url = try catalog.writeSchema(to: folder.file("App.schema.plist"))
		let schema = try SchemaFile(contentsOf: url)
		#expect(schema.entries == SchemaFile(entries: catalog.schemaEntries).entries)
		#expect(schema.entry(named: "homepage")?.input == .url)
		#expect(schema.entry(named: "count")?.input == .integer)
		#expect(schema.entry(named: "since")?.input == .date)
		#expect(schema.entry(named: "id")?.input == .uuid)
		#expect(schema.entry(named: "window")?.input == nil, "JSON text of a struct: no text converts to it")
		#expect(schema.entry(named: "letter")?.input == nil)
		#expect(schema.entry(named: "letter")?.storedDefault?.value as? String == "alpha")
	}

	struct Shaped: Codable, Defaults.Serializable {
		var size: Int
		var name: String?
		var tags: [String]
		var limits: [String: Int]
	}

	/// The structure of a stored form, from the key's default or a sample: a `Codable` value's JSON fields, required
	/// where they are stored properties that are not optional; a Swift dictionary's entries of one shape; an array's
	/// elements.
	@Test func theSchemaDescribesTheStructureOfStoredForms() throws {
		let store = Defaults.InMemoryStore()
		let shaped = Defaults.Key<Shaped?>("shaped", suite: store)
		let tags = Defaults.Key<[String]>("tags", default: [], suite: store)
		let catalog = Defaults.Catalog([shaped, tags])
		#expect(catalog.schemaEntries.map(\.shape) == [nil, .array(nil)], "nothing shows the structure yet")

		let sampled = catalog.withSample(Shaped(size: 1, name: "n", tags: ["t"], limits: ["a": 1]), for: shaped)
		let expected = StoredShape.jsonText(
			.record([
				"size": .init(shape: .number, isRequired: true),
				"name": .init(shape: .string, isRequired: false),
				"tags": .init(shape: .array(.string), isRequired: true),
				"limits": .init(shape: .map(.number), isRequired: true),
			]))
		#expect(sampled.schemaEntries[0].shape == expected)
		#expect(sampled.schemaEntries[1].shape == .array(nil))

		let folder = try TemporaryDirectory()
		let schema = try SchemaFile(contentsOf: sampled.writeSchema(to: folder.file("App.schema.plist")))
		#expect(schema.entry(named: "shaped")?.shape == expected, "the shape round-trips through the file")
	}

	/// A schema written before shapes (version 1) still reads, without them; a shape of a kind this does not know
	/// reads as unknown, which accepts any value.
	@Test func aVersion1SchemaStillReads() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("App.schema.plist")
		let file: [String: Any] = [
			"format": "Defaults schema", "version": 1,
			"keys": [
				"count": ["type": "Int", "bridge": "IntBridge", "input": "integer", "default": 3],
				"later": ["type": "Thing", "bridge": "B", "shape": ["kind": "hologram"]],
			],
		]
		try PropertyListSerialization.data(fromPropertyList: file, format: .xml, options: 0).write(to: url)
		let schema = try SchemaFile(contentsOf: url)
		#expect(schema.entry(named: "count")?.input == .integer)
		#expect(schema.entry(named: "count")?.shape == nil)
		#expect(schema.entry(named: "later")?.shape == nil)
	}

	@Test func theSchemaGoesBesideTheSettingsFile() throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.FileStore.at(folder.file("App.plist"))
		let catalog = Defaults.Catalog([Defaults.Key<Int>("count", default: 3, suite: store)])
		let url = try catalog.writeSchema()
		#expect(url.lastPathComponent == "App.schema.plist")
		#expect(url.deletingLastPathComponent().standardizedFileURL == folder.url.standardizedFileURL)
		#expect(try SchemaFile(contentsOf: url).entry(named: "count")?.storedDefault?.value as? Int == 3)

		let elsewhere = Defaults.Catalog([Defaults.Key<Int>("count", default: 3, suite: Defaults.InMemoryStore())])
		#expect(throws: Defaults.Catalog.SchemaError.self) { try elsewhere.writeSchema() }
	}

	@Test func aSchemaFileThatIsNotOneIsRefusedWithTheReason() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("App.schema.plist")
		try Data("{ keys = {}; }".utf8).write(to: url)
		#expect {
			try SchemaFile(contentsOf: url)
		} throws: { error in
			"\(error)".contains("not a Defaults schema")
		}
	}

	@Test func aKeyTheCatalogMissesIsFound() {
		let store = Defaults.InMemoryStore()
		let listed = Defaults.Key<Int>("listed", default: 0, suite: store)
		let catalog = Defaults.Catalog([listed])
		#expect(catalog.uncataloguedKeys(in: store).isEmpty)
		_ = Defaults.Key<String>("forgotten", default: "", suite: store)
		#expect(catalog.uncataloguedKeys(in: store) == ["forgotten"])
	}

	@Test func resetAndExportTakeTheCataloguedKeys() throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.InMemoryStore()
		let count = Defaults.Key<Int>("count", default: 0, suite: store)
		let other = Defaults.Key<Int>("other", default: 0, suite: store)
		let catalog = Defaults.Catalog([count])
		store[count] = 5
		store[other] = 6
		let export = folder.file("Export.plist")
		try Defaults.Snapshot.write(of: store, keys: catalog.keys, to: export)
		let exported = try PropertyListSerialization.propertyList(from: Data(contentsOf: export), format: nil)
		#expect((exported as? [String: Any])?["count"] as? Int == 5)
		#expect((exported as? [String: Any])?["other"] == nil)
		Defaults.reset(catalog.keys)
		#expect(store[count] == 0)
		#expect(store[other] == 6)
	}
}

/// The flags of a description come from the key's store and sync: locked by an administrator, added to sync.
@Suite(.scaledTimeLimit(minutes: 1)) struct CatalogFlagTests {
	@Test func aLockedKeyAndASyncedKeyAreSaidToBe() throws {
		let home = try TemporaryDirectory()
		let system = try TemporaryDirectory()
		let name = uniqueKeyName("channel")
		let data = try PropertyListSerialization.data(fromPropertyList: [name: "stable"], format: .xml, options: 0)
		try data.write(to: system.file("app.locks.plist"), options: .atomic)
		let store = Defaults.FileStore.at(home.file("app.plist"), systemFolders: [system.url])
		let channel = Defaults.Key<String>(name, default: "", suite: store)
		let synced = Defaults.Key<Int>(uniqueKeyName("synced"), default: 0, suite: store, iCloud: true)
		defer { Defaults.iCloud.remove(synced) }

		let entries = Defaults.Catalog([channel, synced]).entries
		#expect(entries[0].isLocked && !entries[0].isSynced)
		#expect(entries[1].isSynced && !entries[1].isLocked)
		let schema = try SchemaFile(contentsOf: try Defaults.Catalog([channel, synced]).writeSchema())
		#expect(schema.entry(named: name)?.isLocked == true)
		#expect(schema.entry(named: synced.name)?.isSynced == true)
	}
}
