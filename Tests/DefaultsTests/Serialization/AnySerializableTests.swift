import Defaults
import DefaultsTestSupport
import Foundation
import Testing

@Suite struct AnySerializableTests {
	@Test func literalsWrapTheirValues() {
		let values: [String: Defaults.AnySerializable] = [
			"string": "🦄", "int": 3, "double": 1.5, "bool": true, "array": [1, "two"], "dictionary": ["a": 1],
		]
		#expect(values["string"]?.get() == "🦄")
		#expect(values["int"]?.get(Int.self) == 3)
		#expect(values["double"]?.get(Double.self) == 1.5)
		#expect(values["bool"]?.get(Bool.self) == true)
		#expect(values["array"]?.get([Defaults.AnySerializable].self) == [1, "two"])
		#expect(values["dictionary"]?.get([String: Int].self) == ["a": 1])
	}

	@Test func getReturnsNilForAnotherType() {
		let value: Defaults.AnySerializable = "text"
		#expect(value.get(Int.self) == nil)
		#expect(value.get(URL.self) == nil)
	}

	@Test func wrapsBridgedTypesThroughTheirStoredForm() {
		let url = URL(string: "https://example.com/x")!
		let window = Window(width: 1, height: 2, title: "t")
		var value = Defaults.AnySerializable(url)
		#expect(value.get(URL.self) == url)
		#expect(value.propertyListValue as? String == "\"https:\\/\\/example.com\\/x\"")
		value.set(window)
		#expect(value.get(Window.self) == window)
	}

	@Test func equalityAndHashingFollowTheStoredForm() {
		let first: Defaults.AnySerializable = ["a": 1, "b": [true, "x"]]
		let second: Defaults.AnySerializable = ["b": [true, "x"], "a": 1]
		#expect(first == second)
		#expect(first.hashValue == second.hashValue)
		#expect(first != ["a": 2, "b": [true, "x"]])
		#expect(Defaults.AnySerializable(1) != Defaults.AnySerializable(true))
		#expect(Set<Defaults.AnySerializable>([1, 1, "1"]).count == 2)
	}

	@Test func nilIsLeftOutOfADictionary() {
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<[String: Defaults.AnySerializable]>("settings", default: [:], suite: store)
		store[key] = ["kept": 1, "dropped": nil]
		#expect(store.storedValue(forKey: "settings") as? [String: Int] == ["kept": 1])
		#expect(store[key] == ["kept": 1])
	}

	/// A value holding nothing removes the key's stored value, whether the key holds an `AnySerializable` or an
	/// optional one (a cast looks through the optional; a write asks the value's type before casting it, issue 32).
	@Test func aValueHoldingNothingRemovesTheStoredValue() {
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<Defaults.AnySerializable>("erased", default: 1, suite: store)
		let optionalKey = Defaults.Key<Defaults.AnySerializable?>("optional", suite: store)
		store[key] = 2
		store[optionalKey] = 3
		#expect(Set(store.storedKeys()) == ["erased", "optional"])
		store[key] = nil
		store[optionalKey] = .some(nil)
		#expect(store.storedKeys().isEmpty)
		#expect(store[key] == 1)
	}

	@Test func aDictionaryKeyIsStoredAsAPlainPropertyListDictionary() {
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<[String: Defaults.AnySerializable]>("magic", default: [:], suite: store)
		store[key]["unicorn"] = "🦄"
		store[key]["number"] = 3
		let stored = store.storedValue(forKey: "magic") as? [String: Any]
		#expect(stored?["unicorn"] as? String == "🦄")
		#expect(stored?["number"] as? Int == 3)
		#expect(store[key]["number"]?.get(Int.self) == 3)
	}
}
