// Mirrors the DocC article "Stores" (Sources/Defaults/Documentation.docc/WorkingWithStores.md): the same code, run.
// Keep the two in step. Differences: the file stores are files in a temporary folder rather than in the real
// configuration folder and /var/lib; the UserDefaults suite has a unique name and is removed afterwards.
import Defaults
import DefaultsStoreConformance
import Foundation
import Testing

private final class DictionaryStore: Defaults.Store {
	private let lock = NSLock()
	private var values: [String: Any] = [:]
	private var registered: [String: Any] = [:]

	func storedValue(forKey key: String) -> Any? {
		lock.withLock { values[key] ?? registered[key] }
	}

	func setStoredValue(_ value: Any, forKey key: String) {
		lock.withLock { values[key] = value }
	}

	func removeStoredValue(forKey key: String) {
		_ = lock.withLock { values.removeValue(forKey: key) }
	}

	func registerDefaultValues(_ values: [String: Any]) {
		lock.withLock { registered.merge(values) { _, new in new } }
	}

	func storedKeys() -> [String] {
		lock.withLock { Array(values.keys) }
	}

	func flush() -> Bool { true }  // write to your backend here
}

@Suite struct WorkingWithStoresExampleTests {
	@Test func theFileStore() throws {
		let folder = try TemporaryDirectory()
		let local = Defaults.FileStore.at(folder.file("settings.plist"))

		let volume = Defaults.Key<Int>("volume", default: 5, suite: local)
		local[volume] = 7
		local.flush()  // optional: it flushes by itself

		let data = try Data(contentsOf: folder.file("settings.plist"))
		#expect(data.starts(with: Array("bplist00".utf8)))
		let onDisk = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
		#expect(onDisk?["volume"] as? Int == 7)

		#expect(throws: Defaults.FileStore.InvalidSuiteName.self) {
			try Defaults.FileStore.suite(named: "../escape")
		}
	}

	@Test func userDefaults() {
		let name = "WorkingWithStoresExample-\(UUID().uuidString)"
		let suite = UserDefaults(suiteName: name)!
		defer { UserDefaults.standard.removePersistentDomain(forName: name) }
		let count = Defaults.Key<Int>("count", default: 0, suite: suite)
		suite[count] += 1
		#expect(suite[count] == 1)
		suite[count] = 0
		suite.removeValue(forKey: "count")
	}

	@Test func theInMemoryStore() throws {
		let store = Defaults.InMemoryStore()
		let volume = Defaults.Key<Int>("volume", default: 5, suite: store)
		store[volume] = 7
		#expect(store.storedKeys() == ["volume"])  // ["volume"]

		let seeded = Defaults.InMemoryStore()
		try seeded.write(3, forKey: "volume")  // start from stored forms
		#expect(seeded[volume] == 3)  // 3
	}

	@Test func readingAndWritingAStoreDirectly() throws {
		let store = Defaults.InMemoryStore()
		try store.write(["a", "b"], forKey: "recent")
		#expect(store.storedValue(forKey: "recent") as? [String] == ["a", "b"])  // ["a", "b"]
		store.removeValue(forKey: "recent")
		#expect(store.storedValue(forKey: "recent") == nil)
	}

	@Test func yourOwnStore() {
		let store = DictionaryStore()
		let volume = Defaults.Key<Int>("volume", default: 5, suite: store)
		#expect(store[volume] == 5)
		#expect(store.storedValue(forKey: "volume") as? Int == 5)  // the registered default
		store[volume] = 9
		#expect(store[volume] == 9)
		#expect(store.storedKeys() == ["volume"])

		var heard: [Int] = []
		let observation = Defaults.observe(volume, options: []) { heard.append($0.newValue) }
		defer { observation.invalidate() }
		store.setStoredValue(11, forKey: "volume")  // the backend changed by itself…
		store.reportOutsideChanges(["volume"])  // …so tell the observers
		#expect(heard == [11])
	}

	@Test func dictionaryStoreKeepsTheContract() throws {
		try StoreConformance.check(outsideChange: { store, key, value in
			store.setStoredValue(value, forKey: key)  // what the backend's other clients do…
			store.reportOutsideChanges([key])  // …and how the store reports it
		}) {
			DictionaryStore()
		}
	}
}
