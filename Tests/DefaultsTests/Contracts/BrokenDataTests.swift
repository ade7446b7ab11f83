import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// Each entry of `Fixtures/Broken` reads as its key's default, says why, is reported once, and is never rewritten or
/// removed: not by reads, not by resets of other keys, not by a migration that cannot convert it.
@Suite struct BrokenDataTests {
	let fallbackWindow = Window(width: 1, height: 1, title: "default")

	func check<Value: Defaults.Serializable & Equatable>(
		_ file: String, _ entry: String, reasonMentions expectedReason: String,
		key makeKey: (Defaults.InMemoryStore, String) -> Defaults.Key<Value>,
		sourceLocation: SourceLocation = #_sourceLocation
	) throws {
		FailureRecorder.start()
		let loaded = try LoadedFixture(file)
		let name = loaded.name(entry)
		let key = makeKey(loaded.store, name)

		#expect(loaded.store[key] == key.defaultValue, sourceLocation: sourceLocation)
		#expect(loaded.store[key] == key.defaultValue, sourceLocation: sourceLocation)
		guard case .undecodable(let error) = key.storedState() else {
			Issue.record("expected undecodable, got \(key.storedState())", sourceLocation: sourceLocation)
			return
		}
		#expect(error.keyName == name, sourceLocation: sourceLocation)
		#expect(
			Defaults.PropertyList.isEqual(error.storedValue, loaded.fixture[entry]!), "says what was stored",
			sourceLocation: sourceLocation)
		#expect(
			error.reason.contains(expectedReason), "reason names the problem: \(error.reason)",
			sourceLocation: sourceLocation)
		#expect(error.description.contains(error.bridgeName), sourceLocation: sourceLocation)

		let failures = FailureRecorder.failures(forKey: name)
		#expect(failures.count == 1, "reported once", sourceLocation: sourceLocation)
		#expect(failures.first?.reason == .decodingFailed, sourceLocation: sourceLocation)
		#expect(failures.first?.decodingError?.reason == error.reason, sourceLocation: sourceLocation)

		// Nothing the user did not ask for touches the value.
		#expect(!key.rewriteInCurrentForm(), sourceLocation: sourceLocation)
		for other in loaded.fixture.keys where other != entry {
			loaded.store.removeValue(forKey: loaded.name(other))
		}
		Defaults.reset(uniqueKeyName("unrelated"), suite: loaded.store)
		try Defaults.migrate([.init(version: 1, .convert(key))], store: loaded.store)
		_ = loaded.store[key]
		#expect(loaded.isUnchanged(entry), "the stored bytes are unchanged", sourceLocation: sourceLocation)
		let after = FailureRecorder.failures(forKey: name)
		#expect(after.filter { $0.reason == .decodingFailed }.count == 1, sourceLocation: sourceLocation)
		#expect(
			after.filter { $0.reason == .migration }.count == 1, "the migration says it left the value",
			sourceLocation: sourceLocation)
	}

	// MARK: JSON

	@Test func jsonMissingAKey() throws {
		try check("Broken/JSON.plist", "missingKey", reasonMentions: "misses the key 'height'") {
			.init($1, default: fallbackWindow, suite: $0)
		}
	}

	@Test func jsonWithAValueOfTheWrongType() throws {
		try check("Broken/JSON.plist", "wrongType", reasonMentions: "at .width") {
			.init($1, default: fallbackWindow, suite: $0)
		}
	}

	@Test func invalidJSON() throws {
		try check("Broken/JSON.plist", "invalidJSON", reasonMentions: "not valid JSON") {
			.init($1, default: fallbackWindow, suite: $0)
		}
	}

	@Test func garbageForAKeyStoringJSONData() throws {
		try check("Broken/JSON.plist", "garbageJSONData", reasonMentions: "not valid JSON") {
			.init($1, default: fallbackWindow, suite: $0, bridge: .jsonData)
		}
	}

	@Test func jsonTextForAKeyStoringJSONDataThatDoesNotListIt() throws {
		try check("Broken/JSON.plist", "missingKey", reasonMentions: "stored as Data") {
			.init($1, default: fallbackWindow, suite: $0, bridge: .jsonData)
		}
	}

	// MARK: Values of the wrong type or range

	@Test func aStringForAnInteger() throws {
		try check("Broken/Values.plist", "stringForInt", reasonMentions: "expected an integer") {
			.init($1, default: 7, suite: $0)
		}
	}

	@Test func anIntegerOutOfRangeForInt8() throws {
		try check("Broken/Values.plist", "outOfRangeInt8", reasonMentions: "range of Int8") {
			Defaults.Key<Int8>($1, default: 1, suite: $0)
		}
	}

	@Test func aRangeWithBoundsOutOfOrder() throws {
		try check("Broken/Values.plist", "rangeOutOfOrder", reasonMentions: "lower bound is above the upper bound") {
			Defaults.Key<Range<Int>>($1, default: 0..<1, suite: $0)
		}
	}

	@Test func aRawValueWithNoCase() throws {
		try check("Broken/Values.plist", "unknownRawValue", reasonMentions: "no value with the raw value sepia") {
			Defaults.Key<Theme>($1, default: .light, suite: $0)
		}
	}

	// MARK: Keyed archives

	@Test func anArchiveOfAnotherClass() throws {
		try check(
			"Broken/Archives.plist", "otherClass",
			reasonMentions: "holds a DefaultsTestSupport.Tag, not a DefaultsTestSupport.Bookmark"
		) {
			.init($1, default: Bookmark(path: "/default"), suite: $0)
		}
	}

	@Test func aTruncatedArchive() throws {
		try check("Broken/Archives.plist", "truncated", reasonMentions: "not a keyed archive") {
			.init($1, default: Bookmark(path: "/default"), suite: $0)
		}
	}

	@Test func garbageBytesForAnArchive() throws {
		try check("Broken/Archives.plist", "garbage", reasonMentions: "not a keyed archive") {
			.init($1, default: Bookmark(path: "/default"), suite: $0)
		}
	}
}
