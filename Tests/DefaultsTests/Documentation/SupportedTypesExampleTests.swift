// Mirrors the DocC article "Supported types and their stored forms"
// (Sources/Defaults/Documentation.docc/SupportedTypes.md): its examples, run, and its quoted fixture entries, checked
// against Fixtures/StoredForms. Keep the article, this file and Docs/StoredForms.md in step.
import Defaults
import Foundation
import Testing

private enum Theme: String, Defaults.Serializable { case light, dark }  // the raw value
private struct Window: Codable, Defaults.Serializable { var width: Int; var height: Int }  // JSON text
private enum Letter: String, Codable, Defaults.Serializable { case alpha, beta }

private enum Mime: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable {
	case json = "application/json", text = "text/plain"
}

@Suite struct SupportedTypesExampleTests {
	@Test func theStoredFormOfAValue() {
		let store = Defaults.InMemoryStore()
		let window = Defaults.Key<Window>("window", default: Window(width: 800, height: 600), suite: store)
		store[window] = Window(width: 1024, height: 768)
		#expect(store.storedValue(forKey: "window") as? String == "{\"height\":768,\"width\":1024}")
	}

	@Test func theArticlesExamplesHaveTheFixturesForms() throws {
		let store = Defaults.InMemoryStore()
		store[Defaults.Key<Theme>("rawString", default: .light, suite: store)] = .dark
		store[Defaults.Key<Letter>("codableString", default: .beta, suite: store)] = .alpha
		store[Defaults.Key<UUID>("uuid", default: UUID(), suite: store)] = UUID(
			uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
		store[Defaults.Key<URL>("url", default: URL(filePath: "/"), suite: store)] = URL(
			string: "https://example.com/a/b?c=d&e=f#g")!
		store[Defaults.Key<Range<Int>>("range", default: 0..<1, suite: store)] = 1..<5
		store[Defaults.Key<Mime>("mime", default: .text, suite: store)] = .json

		#expect(store.storedValue(forKey: "rawString") as? String == "dark")
		#expect(store.storedValue(forKey: "codableString") as? String == "\"alpha\"")
		#expect(store.storedValue(forKey: "uuid") as? String == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
		#expect(store.storedValue(forKey: "url") as? String == #""https:\/\/example.com\/a\/b?c=d&e=f#g""#)
		#expect(store.storedValue(forKey: "range") as? [Int] == [1, 5])
		#expect(store.storedValue(forKey: "mime") as? String == "application/json")
	}

	/// The entries the article quotes are the fixtures' entries.
	@Test func theQuotedEntriesAreTheFixtures() throws {
		let codable = try Fixtures.dictionary("StoredForms/Codable.plist")
		#expect(codable["struct"] as? String == #"{"height":600,"title":"Main \/ \"quoted\"","width":800}"#)
		let raw = try Fixtures.dictionary("StoredForms/RawRepresentable.plist")
		#expect(raw["rawString"] as? String == "dark")
		#expect(raw["codableString"] as? String == "\"alpha\"")
		#expect(raw["preferRawRepresentable"] as? String == "application/json")
		let foundation = try Fixtures.dictionary("StoredForms/Foundation.plist")
		#expect(foundation["uuid"] as? String == "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
		#expect(foundation["url"] as? String == #""https:\/\/example.com\/a\/b?c=d&e=f#g""#)
		let ranges = try Fixtures.dictionary("StoredForms/Ranges.plist")
		#expect(ranges["range"] as? [Int] == [1, 5])
	}

	/// The article's table lists one fixture file per row group; every file it names exists, and every file exists in it.
	@Test func theTableNamesEveryFixtureFile() throws {
		let article = try String(
			contentsOf: Fixtures.folder.deletingLastPathComponent()
				.appending(path: "Sources/Defaults/Documentation.docc/SupportedTypes.md"), encoding: .utf8)
		let files = try FileManager.default.contentsOfDirectory(atPath: Fixtures.url("StoredForms").path)
			.filter { $0.hasSuffix(".plist") }
		#expect(!files.isEmpty)
		for file in files {
			#expect(article.contains("`\(file)`"), "the article's table misses \(file)")
		}
	}

	@Test func numbersAreNotTruncated() {
		let store = Defaults.InMemoryStore()
		store[Defaults.Key<Int>("small", default: 0, suite: store)] = 300
		let small = Defaults.Key<Int8>("small", default: 1, suite: store)
		#expect(store[small] == 1)  // a stored 300 does not decode as an Int8: the default
		#expect(store.storedValue(forKey: "small") as? Int == 300)  // and it stays in the store
	}

	@Test func collectionsOfYourOwnTypes() {
		let store = Defaults.InMemoryStore()
		let windows = Defaults.Key<[Window]>("windows", default: [], suite: store)
		let themes = Defaults.Key<[String: [Theme]]>("themes", default: [:], suite: store)
		let ids = Defaults.Key<Set<UUID>>("ids", default: [], suite: store)
		let span = Defaults.Key<ClosedRange<Double>>("span", default: 0...1, suite: store)
		store[windows] = [Window(width: 1, height: 2)]
		store[themes] = ["night": [.dark]]
		store[ids] = [UUID()]
		store[span] = 0.5...1.5
		#expect(store[windows].first?.height == 2)
		#expect(store[themes]["night"] == [.dark])
		#expect(store[ids].count == 1)
		#expect(store[span] == 0.5...1.5)
	}
}
