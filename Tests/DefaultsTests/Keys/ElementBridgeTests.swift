import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// A collection key can name the bridge of its elements (`.array(of:)`, `.set(of:)`, `.dictionary(of:)`,
/// `.optional(_:)`), with older forms of an element: every element is written in the pinned form, and an element
/// stored in an older form reads, marks the value as in an older form, and is rewritten only when asked.
@Suite struct ElementBridgeTests {
	let moneys = StoredFormSample.moneys
	let moneyV2 = StoredFormSample.moneyV2
	/// The forms `MoneyBridgeV2` writes the two amounts in.
	let pinned: [[String: Any]] = [["cents": 1234, "currency": "EUR"], ["cents": -5, "currency": "USD"]]
	/// The forms `Money`'s own bridge wrote them in.
	let text = ["1234 EUR", "-5 USD"]

	@Test func anArrayReadsElementsInAnOlderFormAndRewritesThemInThePinnedForm() throws {
		let old: [Any] = [text[0], pinned[1]]  // one element of each form, as after a partial update
		let store = try Defaults.InMemoryStore(values: ["prices": old])
		let key = Defaults.Key<[Money]>(
			"prices", default: [], suite: store, bridge: .array(of: moneyV2, alsoReading: [.automatic]))

		#expect(store[key] == moneys)
		#expect(Fixtures.isSame(try #require(store.storedValue(forKey: "prices")), old), "reading never rewrites")
		guard case .olderForm(let value, let bridgeName) = key.storedState() else {
			Issue.record("an element in an older form makes the array's form an older one")
			return
		}
		#expect(value == moneys)
		#expect(bridgeName == "MoneyTextBridge")

		#expect(key.rewriteInCurrentForm())
		#expect(Fixtures.isSame(try #require(store.storedValue(forKey: "prices")), pinned))
		guard case .current = key.storedState() else {
			Issue.record("expected the current form after the rewrite")
			return
		}
		#expect(key.rewriteInCurrentForm() == false)
	}

	@Test func withoutTheOlderFormTheArrayDoesNotDecodeAndIsKept() throws {
		FailureRecorder.start()
		let name = uniqueKeyName("prices")
		let store = try Defaults.InMemoryStore(values: [name: [pinned[0], text[1]]])
		let key = Defaults.Key<[Money]>(name, default: [], suite: store, bridge: .array(of: moneyV2))
		#expect(store[key] == [])
		guard case .undecodable(let error) = key.storedState() else {
			Issue.record("expected a failure")
			return
		}
		#expect(error.bridgeName == "array of MoneyBridgeV2")
		#expect(error.reason.hasPrefix("element 1: "), "names the element: \(error.reason)")
		#expect(store.storedValue(forKey: name) is [Any], "the stored data is left alone")
		#expect(FailureRecorder.failures(forKey: name).count == 1)
	}

	@Test func anElementNoFormReadsNamesEveryFormTried() throws {
		let store = try Defaults.InMemoryStore(values: ["prices": [pinned[0], 7]])
		let key = Defaults.Key<[Money]>(
			"prices", default: [], suite: store, bridge: .array(of: moneyV2, alsoReading: [.automatic]))
		guard case .undecodable(let error) = key.storedState() else {
			Issue.record("expected a failure")
			return
		}
		#expect(error.reason.hasPrefix("element 1: MoneyBridgeV2"), "\(error.reason)")
		#expect(error.reason.contains("also tried MoneyTextBridge: "), "\(error.reason)")
		#expect(store.storedValue(forKey: "prices") is [Any])
	}

	@Test func aSetReadsOlderElementsAndIsRewrittenInItsStableOrder() throws {
		let store = try Defaults.InMemoryStore(values: ["wallet": text])
		let key = Defaults.Key<Set<Money>>(
			"wallet", default: [], suite: store, bridge: .set(of: moneyV2, alsoReading: [.automatic]))
		#expect(store[key] == Set(moneys))
		guard case .olderForm(_, "MoneyTextBridge") = key.storedState() else {
			Issue.record("expected the older form of the elements")
			return
		}
		#expect(key.rewriteInCurrentForm())
		let rewritten = try #require(store.storedValue(forKey: "wallet"))
		let fixture = try #require(try Fixtures.dictionary("StoredForms/ElementBridges.plist")["moneySet"])
		#expect(Fixtures.isSame(rewritten, fixture), "the order every write of this set gives")
	}

	@Test func aDictionaryReadsOlderValuesAndNamesTheFirstByName() throws {
		let store = try Defaults.InMemoryStore(values: ["fees": ["b": text[1], "c": pinned[0], "a": "1 CHF"]])
		let key = Defaults.Key<[String: Money]>(
			"fees", default: [:], suite: store,
			bridge: .dictionary(of: moneyV2, alsoReading: [.automatic]))
		#expect(store[key] == ["a": Money(cents: 1, currency: "CHF"), "b": moneys[1], "c": moneys[0]])
		guard case .olderForm(_, "MoneyTextBridge") = key.storedState() else {
			Issue.record("expected the older form of the values")
			return
		}
		#expect(key.rewriteInCurrentForm())
		let rewritten = try #require(store.storedValue(forKey: "fees") as? [String: Any])
		#expect(Fixtures.isSame(rewritten["b"] as Any, pinned[1]))
		#expect(Fixtures.isSame(rewritten["a"] as Any, ["cents": 1, "currency": "CHF"]))
	}

	@Test func nestedCollectionsReadAnOlderElementDeepInside() throws {
		let store = try Defaults.InMemoryStore(values: [
			"byShop": ["shop": [pinned[0], text[1]], "market": [pinned[1]]]
		])
		let key = Defaults.Key<[String: [Money]]>(
			"byShop", default: [:], suite: store,
			bridge: .dictionary(of: .array(of: moneyV2, alsoReading: [.automatic])))
		#expect(store[key] == ["shop": moneys, "market": [moneys[1]]])
		guard case .olderForm(_, "MoneyTextBridge") = key.storedState() else {
			Issue.record("expected the older form of an element two levels down")
			return
		}
		#expect(key.rewriteInCurrentForm())
		let fixture = try #require(
			try Fixtures.dictionary("StoredForms/ElementBridges.plist")["moneyDictionaryOfArrays"])
		#expect(Fixtures.isSame(try #require(store.storedValue(forKey: "byShop")), fixture))
	}

	@Test func optionalElementsReadTheirOlderForms() throws {
		let store = try Defaults.InMemoryStore(values: ["slots": [text[0], pinned[1]]])
		let key = Defaults.Key<[Money?]>(
			"slots", default: [], suite: store,
			bridge: .array(of: .optional(moneyV2), alsoReading: [.optional(.automatic)]))
		#expect(store[key] == moneys)
		guard case .olderForm = key.storedState() else {
			Issue.record("expected the older form")
			return
		}
	}

	@Test func aNilElementOfAnArrayIsReportedAndWritesNothing() {
		FailureRecorder.start()
		let name = uniqueKeyName("slots")
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<[Money?]>(name, default: [], suite: store, bridge: .array(of: .optional(moneyV2)))
		let slots: [Money?] = [moneys[0], nil]
		store[key] = slots
		#expect((store.storedValue(forKey: name) as? [Any])?.isEmpty == true, "still the registered default")
		let failure = FailureRecorder.failures(forKey: name).first
		#expect(failure?.reason == .encodingFailed)
		#expect(failure?.message.contains("element 1 is nil") == true, "\(failure?.message ?? "no failure")")
	}

	@Test func aNilValueOfADictionaryHasNoEntry() {
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<[String: Money?]>(
			"slots", default: [:], suite: store, bridge: .dictionary(of: .optional(moneyV2)))
		var slots: [String: Money?] = ["full": moneys[0]]
		slots.updateValue(nil, forKey: "empty")
		#expect(slots.count == 2)
		store[key] = slots
		#expect((store.storedValue(forKey: "slots") as? [String: Any])?.keys.sorted() == ["full"])
	}

	@Test func aMigrationConvertsOlderElements() throws {
		let store = try Defaults.InMemoryStore(values: ["prices": text])
		let key = Defaults.Key<[Money]>(
			"prices", default: [], suite: store, bridge: .array(of: moneyV2, alsoReading: [.automatic]))
		try Defaults.migrate([Defaults.Migration(version: 1, .convert(key))], store: store)
		#expect(Fixtures.isSame(try #require(store.storedValue(forKey: "prices")), pinned))
	}

	@Test func aWholeCollectionInAnOlderFormStillReadsThroughTheKeysOwnOlderForms() throws {
		let store = try Defaults.InMemoryStore(values: ["prices": text])
		let key = Defaults.Key<[Money]>(
			"prices", default: [], suite: store, bridge: .array(of: moneyV2), alsoReading: [.automatic])
		#expect(store[key] == moneys)
		guard case .olderForm(_, let bridgeName) = key.storedState() else {
			Issue.record("expected the key's older form")
			return
		}
		#expect(bridgeName == "ArrayBridge<Money>")
	}

	/// The element bridges that stand for the type's own bridges store what a key without a bridge stores, byte for
	/// byte: the fixtures of the collections' own forms.
	@Test func automaticElementBridgesStoreTheFormsOfKeysWithoutABridge() throws {
		let fixtures = try Fixtures.dictionary("StoredForms/Collections.plist")
		let store = Defaults.InMemoryStore()
		func expectFixture<Value: Defaults.Serializable & Equatable>(
			_ name: String, _ value: Value, _ bridge: Defaults.AnyBridge<Value>,
			sourceLocation: SourceLocation = #_sourceLocation
		) throws {
			let key = Defaults.Key<Value>(name, default: value, suite: store, bridge: bridge)
			store[key] = value
			let stored = try #require(store.storedValue(forKey: name), sourceLocation: sourceLocation)
			let fixture = try #require(fixtures[name], sourceLocation: sourceLocation)
			#expect(Fixtures.isSame(stored, fixture), "\(name): \(stored)", sourceLocation: sourceLocation)
			#expect(store[key] == value, sourceLocation: sourceLocation)
		}
		try expectFixture("array", ["a", "b", "c"], .array(of: .automatic))
		try expectFixture("arrayOfInt8", [Int8(-1), 2], .array(of: .automatic))
		try expectFixture("arrayOfCodable", [Window(width: 1, height: 2, title: "x")], .array(of: .json))
		try expectFixture("arrayOfCustomBridge", [User(name: "Ada", age: 36)], .array(of: .init(User.bridge)))
		try expectFixture("set", Set([3, 1, 2]), .set(of: .automatic))
		try expectFixture("setOfStrings", Set(["b", "a"]), .set(of: .automatic))
		try expectFixture("dictionary", ["one": 1, "two": 2], .dictionary(of: .automatic))
		try expectFixture("dictionaryWithIntKeys", [1: "one", 2: "two"], .dictionary(of: .automatic))
		try expectFixture(
			"dictionaryOfUUID", ["id": UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!],
			.dictionary(of: .uuidString))
		try expectFixture(
			"nested", [["groups": Set([["a": 1], ["b": 2]])]], .array(of: .dictionary(of: .set(of: .automatic))))
		try expectFixture(
			"nestedCustomBridge", ["team": [User(name: "Grace", age: 45)]], .dictionary(of: .array(of: .automatic)))
	}
}
