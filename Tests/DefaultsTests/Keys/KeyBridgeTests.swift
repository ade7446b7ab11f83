import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// A key can name its bridge and older forms to read, so its stored form is a contract it controls.
@Suite struct KeyBridgeTests {
	let store = Defaults.InMemoryStore()

	@Test func aKeyCanPinTheRawValueFormOfACodableEnum() {
		let key = Defaults.Key<Letter>("letter", default: .beta, suite: store, bridge: .rawValue)
		store[key] = .alpha
		#expect(store.storedValue(forKey: "letter") as? String == "alpha", "raw value, not JSON text")
		#expect(store[key] == .alpha)
	}

	@Test func aKeyCanUseACustomBridgeValue() {
		let key = Defaults.Key<Window>(
			"window", default: Window(width: 0, height: 0, title: ""), suite: store, bridge: WindowSizeBridge())
		store[key] = Window(width: 3, height: 4, title: "ignored")
		#expect(store.storedValue(forKey: "window") as? [Int] == [3, 4])
		#expect(store[key] == Window(width: 3, height: 4, title: ""))
	}

	@Test func jsonDataIsReadWhenListedAndRewrittenOnlyAtTheNextWrite() throws {
		let window = Window(width: 1, height: 2, title: "old")
		let legacy = try JSONEncoder().encode(window)
		let store = try Defaults.InMemoryStore(values: ["window": legacy])
		let key = Defaults.Key<Window>(
			"window", default: Window(width: 0, height: 0, title: ""), suite: store, bridge: .json,
			alsoReading: [.jsonData])
		#expect(store[key] == window)
		#expect(store.storedValue(forKey: "window") as? Data == legacy, "reading never rewrites")
		guard case .olderForm(_, let bridgeName) = key.storedState() else {
			Issue.record("expected an older form")
			return
		}
		#expect(bridgeName == "JSON data")
		store[key] = window
		#expect(store.storedValue(forKey: "window") is String)
		guard case .current = key.storedState() else {
			Issue.record("expected the current form after a write")
			return
		}
	}

	@Test func rewriteInCurrentFormConvertsAnOlderFormAtOnce() throws {
		let store = try Defaults.InMemoryStore(values: ["theme": "\"dark\""])
		let key = Defaults.Key<Letter>("theme", default: .beta, suite: store, bridge: .rawValue, alsoReading: [.json])
		#expect(key.rewriteInCurrentForm() == false, "\"dark\" is no Letter: nothing to rewrite")
		try store.write("\"alpha\"", forKey: "theme")
		#expect(key.rewriteInCurrentForm())
		#expect(store.storedValue(forKey: "theme") as? String == "alpha")
		#expect(key.rewriteInCurrentForm() == false)
	}

	@Test func anOptionalKeyCanNameTheWrappedBridge() {
		let key = Defaults.Key<Letter?>("letter", suite: store, bridge: .rawValue)
		store[key] = .beta
		#expect(store.storedValue(forKey: "letter") as? String == "beta")
		store[key] = nil
		#expect(store.storedValue(forKey: "letter") == nil)
	}

	@Test func storedStateExplainsWhatWasStoredAndWhyItFailed() throws {
		let store = try Defaults.InMemoryStore(values: ["window": "{\"width\":1}"])
		let key = Defaults.Key<Window>(
			"window", default: Window(width: 0, height: 0, title: ""), suite: store, alsoReading: [.jsonData])
		guard case .undecodable(let error) = key.storedState() else {
			Issue.record("expected a failure")
			return
		}
		#expect(error.keyName == "window")
		#expect(error.storedValue as? String == "{\"width\":1}")
		#expect(error.bridgeName.contains("TopLevelCodableBridge"))
		#expect(error.reason.contains("height"), "names the missing key: \(error.reason)")
		#expect(error.alsoTried.first?.bridgeName == "JSON data")
		#expect(error.alsoTried.first?.reason.contains("Data") == true)
		#expect(store.storedValue(forKey: "window") as? String == "{\"width\":1}")
	}

	@Test func storedStateIsAbsentWhenNothingIsStored() {
		let key = Defaults.Key<Int?>("nothing", suite: store)
		guard case .absent = key.storedState() else {
			Issue.record("expected absent")
			return
		}
		#expect(key.storedState().result == nil)
	}

	@Test func theFailureHandlerGetsTheDecodingErrorOncePerKey() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let store = try Defaults.InMemoryStore(values: [name: [1, "x", 3]])
		let key = Defaults.Key<[Int]>(name, default: [], suite: store)
		#expect(store[key] == [])
		#expect(store[key] == [])
		let failures = FailureRecorder.failures(forKey: name)
		#expect(failures.count == 1)
		#expect(failures.first?.decodingError?.reason.contains("element 1") == true)
	}

	@Test func aKeyNamedBridgeWinsOverAConformanceAddedLater() {
		// `Mime` is Codable and PreferRawRepresentable; a key that pinned `.json` keeps JSON text.
		let key = Defaults.Key<Mime>("mime", default: .text, suite: store, bridge: .json)
		store[key] = .json
		#expect(store.storedValue(forKey: "mime") as? String == "\"application\\/json\"")
	}
}

/// Stores only a window's size, as `[width, height]`.
private struct WindowSizeBridge: Defaults.Bridge {
	func serialize(_ value: Window?) -> [Int]? {
		value.map { [$0.width, $0.height] }
	}

	func deserialize(_ object: [Int]?) -> Window? {
		guard let object, object.count == 2 else {
			return nil
		}
		return Window(width: object[0], height: object[1], title: "")
	}
}
