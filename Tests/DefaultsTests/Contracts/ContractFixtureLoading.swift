import Defaults
import Foundation

/// A fixture file loaded into a fresh store, each entry under a name no other test uses, so that the failures
/// recorded for a key belong to this test.
struct LoadedFixture {
	let store: Defaults.InMemoryStore
	let fixture: [String: Any]
	private let names: [String: String]

	init(_ file: String) throws {
		let fixture = try Fixtures.dictionary(file)
		let names = Dictionary(uniqueKeysWithValues: fixture.keys.map { ($0, uniqueKeyName($0)) })
		self.fixture = fixture
		self.names = names
		store = try Defaults.InMemoryStore(
			values: Dictionary(uniqueKeysWithValues: fixture.map { (names[$0.key]!, $0.value) }))
	}

	/// The store's name for the fixture's `entry`.
	func name(_ entry: String) -> String {
		names[entry]!
	}

	/// Whether the store still holds exactly the fixture's bytes for `entry`.
	func isUnchanged(_ entry: String) -> Bool {
		guard let stored = store.storedValue(forKey: name(entry)), store.storedKeys().contains(name(entry)) else {
			return false
		}
		return Defaults.PropertyList.isEqual(stored, fixture[entry]!)
	}
}
