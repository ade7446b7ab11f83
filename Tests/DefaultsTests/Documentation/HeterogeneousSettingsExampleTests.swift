// Mirrors the DocC article "Heterogeneous settings with AnySerializable"
// (Sources/Defaults/Documentation.docc/HeterogeneousSettings.md): the same code, run. Keep the two in step.
// Difference: the key is `fileprivate`, and its stored name has a `heterogeneous` prefix, so that it meets no other
// test's key in the standard store.
import Defaults
import Foundation
import Testing

extension Defaults.Keys {
	fileprivate static let pluginOptions = Key<[String: Defaults.AnySerializable]>(
		"heterogeneousPluginOptions", default: [:])
}

@Suite(.serialized) struct HeterogeneousSettingsExampleTests {
	@Test func mixedTypesInOneDictionary() throws {
		Defaults.reset(.pluginOptions)
		defer { Defaults.reset(.pluginOptions) }

		Defaults[.pluginOptions]["name"] = "Exporter"  // a String
		Defaults[.pluginOptions]["retries"] = 3  // an Int
		Defaults[.pluginOptions]["ratio"] = 0.75  // a Double
		Defaults[.pluginOptions]["enabled"] = true  // a Bool
		Defaults[.pluginOptions]["tags"] = ["fast", "beta"]  // an array of AnySerializable
		Defaults[.pluginOptions]["site"] = .init(URL(string: "https://example.com")!)  // any Serializable value

		let retries: Int? = Defaults[.pluginOptions]["retries"]?.get()  // 3
		let site = Defaults[.pluginOptions]["site"]?.get(URL.self)  // https://example.com
		let wrong = Defaults[.pluginOptions]["name"]?.get(Int.self)  // nil: it is a String
		#expect(retries == 3)
		#expect(site == URL(string: "https://example.com")!)
		#expect(wrong == nil)
		#expect(Defaults[.pluginOptions]["site"]?.get(String.self) == #""https:\/\/example.com""#)

		// What is stored: a plain property-list dictionary.
		let stored = try #require(
			Defaults.standardStore.storedValue(forKey: "heterogeneousPluginOptions") as? [String: Any])
		#expect(stored["enabled"] as? Bool == true)
		#expect(stored["name"] as? String == "Exporter")
		#expect(stored["ratio"] as? Double == 0.75)
		#expect(stored["retries"] as? Int == 3)
		#expect(stored["site"] as? String == #""https:\/\/example.com""#)
		#expect(stored["tags"] as? [String] == ["fast", "beta"])

		var options = Defaults[.pluginOptions]
		options["retries"]?.set(5)
		Defaults[.pluginOptions] = options
		#expect(Defaults[.pluginOptions]["retries"]?.get(Int.self) == 5)
	}

	@Test func equalityIsByStoredForm() {
		#expect(Defaults.AnySerializable(1) == Defaults.AnySerializable(Int8(1)))
		var dictionary: [String: Defaults.AnySerializable] = ["a": 1]
		dictionary["a"] = nil
		#expect(dictionary.isEmpty)
	}
}
