import Defaults

/// A test store that keeps its values in an in-memory store and changes one behaviour of the seam: conformers
/// implement only what they change (a change feed of their own, changes never reported).
protocol InMemoryBackedStore: Defaults.Store {
	var values: Defaults.InMemoryStore { get }
}

extension InMemoryBackedStore {
	func storedValue(forKey key: String) -> Any? { values.storedValue(forKey: key) }
	func setStoredValue(_ value: Any, forKey key: String) { values.setStoredValue(value, forKey: key) }
	func removeStoredValue(forKey key: String) { values.removeStoredValue(forKey: key) }
	func registerDefaultValues(_ defaults: [String: Any]) { values.registerDefaultValues(defaults) }
	func storedKeys() -> [String] { values.storedKeys() }
	func flush() -> Bool { true }
}
