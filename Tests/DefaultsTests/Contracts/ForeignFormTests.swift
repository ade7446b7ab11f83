import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// Each form in `Fixtures/Foreign` reads through a key that lists it, and only through one that does.
@Suite struct ForeignFormTests {
	let window = Window(width: 640, height: 480, title: "Main")
	let fallbackWindow = Window(width: 0, height: 0, title: "")

	/// Reads `entry` of `file` through `listing`, a key that accepts its form, expecting `expected` from the older
	/// form `olderForm`; then through `notListing`, which must read the default and report once. The stored bytes
	/// never change.
	func check<Value: Defaults.Serializable & Equatable>(
		_ file: String, _ entry: String, expected: Value, olderForm: String,
		listing: (Defaults.InMemoryStore, String) -> Defaults.Key<Value>,
		notListing: (Defaults.InMemoryStore, String) -> Defaults.Key<Value>,
		sourceLocation: SourceLocation = #_sourceLocation
	) throws {
		FailureRecorder.start()
		let loaded = try LoadedFixture(file)
		let name = loaded.name(entry)
		let key = listing(loaded.store, name)
		#expect(loaded.store[key] == expected, sourceLocation: sourceLocation)
		guard case .olderForm(let value, let bridgeName) = key.storedState() else {
			Issue.record("expected an older form, got \(key.storedState())", sourceLocation: sourceLocation)
			return
		}
		#expect(value == expected, sourceLocation: sourceLocation)
		#expect(bridgeName == olderForm, sourceLocation: sourceLocation)
		#expect(loaded.isUnchanged(entry), "reading never rewrites", sourceLocation: sourceLocation)
		#expect(FailureRecorder.failures(forKey: name).isEmpty, sourceLocation: sourceLocation)

		let strict = notListing(loaded.store, name)
		#expect(loaded.store[strict] == strict.defaultValue, sourceLocation: sourceLocation)
		#expect(loaded.store[strict] == strict.defaultValue, sourceLocation: sourceLocation)
		guard case .undecodable(let error) = strict.storedState() else {
			Issue.record("a key that does not list the form must not read it", sourceLocation: sourceLocation)
			return
		}
		#expect(error.alsoTried.isEmpty, sourceLocation: sourceLocation)
		#expect(FailureRecorder.failures(forKey: name).count == 1, sourceLocation: sourceLocation)
		#expect(loaded.isUnchanged(entry), "a failed decode never rewrites", sourceLocation: sourceLocation)

		#expect(key.rewriteInCurrentForm(), sourceLocation: sourceLocation)
		guard case .current(let current) = key.storedState() else {
			Issue.record("expected the current form after the rewrite", sourceLocation: sourceLocation)
			return
		}
		#expect(current == expected, sourceLocation: sourceLocation)
	}

	// MARK: Codable as JSON Data

	@Test func jsonDataOfAStruct() throws {
		try check(
			"Foreign/JSONData.plist", "window", expected: window, olderForm: "JSON data",
			listing: { .init($1, default: fallbackWindow, suite: $0, alsoReading: [.jsonData]) },
			notListing: { .init($1, default: fallbackWindow, suite: $0) })
	}

	@Test func jsonDataOfAClass() throws {
		let fallback = Profile(name: "", tags: [])
		try check(
			"Foreign/JSONData.plist", "profile", expected: Profile(name: "Ada", tags: ["admin", "beta"]),
			olderForm: "JSON data",
			listing: { .init($1, default: fallback, suite: $0, alsoReading: [.jsonData]) },
			notListing: { .init($1, default: fallback, suite: $0) })
	}

	@Test func jsonDataOfAnEnumWithAssociatedValues() throws {
		try check(
			"Foreign/JSONData.plist", "shape", expected: Shape.circle(radius: 2), olderForm: "JSON data",
			listing: { .init($1, default: .square, suite: $0, alsoReading: [.jsonData]) },
			notListing: { .init($1, default: .square, suite: $0) })
	}

	@Test func jsonDataOfAFragment() throws {
		try check(
			"Foreign/JSONData.plist", "letter", expected: Letter.beta, olderForm: "JSON data",
			listing: { .init($1, default: .alpha, suite: $0, alsoReading: [.jsonData]) },
			notListing: { .init($1, default: .alpha, suite: $0) })
	}

	// MARK: Codable as JSON text (the well-known Defaults package)

	@Test func jsonTextForAKeyThatStoresJSONData() throws {
		try check(
			"Foreign/JSONText.plist", "window", expected: window, olderForm: "JSON text",
			listing: { .init($1, default: fallbackWindow, suite: $0, bridge: .jsonData, alsoReading: [.json]) },
			notListing: { .init($1, default: fallbackWindow, suite: $0, bridge: .jsonData) })
	}

	@Test func jsonTextWithUnsortedKeysIsThisPackagesOwnForm() throws {
		let loaded = try LoadedFixture("Foreign/JSONText.plist")
		let window = Defaults.Key<Window>(loaded.name("window"), default: fallbackWindow, suite: loaded.store)
		let url = Defaults.Key<URL?>(loaded.name("url"), suite: loaded.store)
		let tag = Defaults.Key<DefaultsTestSupport.Tag?>(loaded.name("tag"), suite: loaded.store)
		#expect(loaded.store[window] == self.window)
		#expect(loaded.store[url] == URL(string: "https://example.com/a?b=1"))
		#expect(loaded.store[tag] == Tag(name: "red"))
		for entry in ["window", "url", "tag"] {
			#expect(loaded.isUnchanged(entry))
		}
	}

	@Test func jsonTextOfATypeThatNowPrefersItsRawValue() throws {
		try check(
			"Foreign/JSONText.plist", "mime", expected: Mime.json, olderForm: "JSON text",
			listing: { .init($1, default: .text, suite: $0, alsoReading: [.json]) },
			notListing: { .init($1, default: .text, suite: $0) })
	}

	@Test func jsonTextForAKeyThatStoresAKeyedArchive() throws {
		try check(
			"Foreign/JSONText.plist", "tag", expected: Tag(name: "red"), olderForm: "JSON text",
			listing: { .init($1, default: Tag(name: ""), suite: $0, bridge: .keyedArchive, alsoReading: [.json]) },
			notListing: { .init($1, default: Tag(name: ""), suite: $0, bridge: .keyedArchive) })
	}

	// MARK: Raw values (`@AppStorage`)

	@Test func aStringRawValueOfACodableEnum() throws {
		try check(
			"Foreign/RawValues.plist", "letter", expected: Letter.beta, olderForm: "RawRepresentableBridge<Letter>",
			listing: { .init($1, default: .alpha, suite: $0, alsoReading: [.rawValue]) },
			notListing: { .init($1, default: .alpha, suite: $0) })
	}

	@Test func anIntegerRawValueOfACodableEnum() throws {
		try check(
			"Foreign/RawValues.plist", "size", expected: Size.large, olderForm: "RawRepresentableBridge<Size>",
			listing: { .init($1, default: .small, suite: $0, alsoReading: [.rawValue]) },
			notListing: { .init($1, default: .small, suite: $0) })
	}

	@Test func aRawValueOfAnEnumThatIsNotCodableIsThisPackagesOwnForm() throws {
		let loaded = try LoadedFixture("Foreign/RawValues.plist")
		let theme = Defaults.Key<Theme>(loaded.name("theme"), default: .light, suite: loaded.store)
		#expect(loaded.store[theme] == .dark)
		guard case .current = theme.storedState() else {
			Issue.record("expected the current form")
			return
		}
	}

	// MARK: Keyed archives

	@Test func aKeyedArchiveOfATypeThatIsNowCodable() throws {
		try check(
			"Foreign/KeyedArchives.plist", "tag", expected: Tag(name: "red"),
			olderForm: "NSSecureCodingBridge<Tag>",
			listing: { .init($1, default: Tag(name: ""), suite: $0, alsoReading: [.keyedArchive]) },
			notListing: { .init($1, default: Tag(name: ""), suite: $0) })
	}

	@Test func aKeyedArchiveOfAnNSSecureCodingObjectIsThisPackagesOwnForm() throws {
		let loaded = try LoadedFixture("Foreign/KeyedArchives.plist")
		let bookmark = Defaults.Key<Bookmark?>(loaded.name("bookmark"), suite: loaded.store)
		#expect(loaded.store[bookmark] == Bookmark(path: "/tmp/notes"))
		#expect(loaded.isUnchanged("bookmark"))
	}

	@Test func aMigrationConvertsEveryForeignFormToTheCurrentOne() throws {
		let loaded = try LoadedFixture("Foreign/JSONData.plist")
		let key = Defaults.Key<Window>(
			loaded.name("window"), default: fallbackWindow, suite: loaded.store, alsoReading: [.jsonData])
		try Defaults.migrate([.init(version: 1, .convert(key))], store: loaded.store)
		#expect(loaded.store.storedValue(forKey: key.name) as? String == #"{"height":480,"title":"Main","width":640}"#)
		#expect(loaded.isUnchanged("profile"), "keys no step names are left alone")
	}
}
