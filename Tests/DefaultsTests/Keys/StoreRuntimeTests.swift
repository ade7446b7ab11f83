import Foundation
import Synchronization
import Testing

@testable import Defaults

/// A store of the user's: it says nothing about counting, yet its keys answer reads of an unchanged store without
/// looking the value up, because the package counts every change it sees.
private final class LookupCountingStore: InMemoryBackedStore, @unchecked Sendable {
	let values = Defaults.InMemoryStore()
	let reportsEveryChange: Bool
	let lookups = Atomic<Int>(0)

	init(reportsEveryChange: Bool = true) {
		self.reportsEveryChange = reportsEveryChange
	}

	func storedValue(forKey key: String) -> Any? {
		lookups.add(1, ordering: .relaxed)
		return values.storedValue(forKey: key)
	}

	var lookupCount: Int { lookups.load(ordering: .relaxed) }
}

/// One runtime per store: found from the store, shared by its keys, and gone with the store.
@Suite(.scaledTimeLimit(minutes: 1)) struct StoreRuntimeTests {
	@Test func aCustomStoreGetsFastReadsForFree() throws {
		let store = LookupCountingStore()
		let key = Defaults.Key<Int>("level", default: 1, suite: store)
		store[key] = 2
		#expect(store[key] == 2)
		let lookups = store.lookupCount
		for _ in 0..<100 {
			#expect(store[key] == 2)
		}
		#expect(store.lookupCount == lookups, "an unchanged store is not asked again")
		try store.write(3, forKey: "level")
		#expect(store[key] == 3)
		store.values.setStoredValue(4, forKey: "level")
		store.reportOutsideChanges(["level"])
		#expect(store[key] == 4, "a reported outside change is read")
		key.reset()
		#expect(store[key] == 1)
	}

	@Test func aStoreThatDoesNotReportEveryChangeIsAskedAtEveryRead() {
		let store = LookupCountingStore(reportsEveryChange: false)
		let key = Defaults.Key<Int>("level", default: 1, suite: store)
		store[key] = 2
		let lookups = store.lookupCount
		for _ in 0..<10 {
			#expect(store[key] == 2)
		}
		#expect(store.lookupCount == lookups + 10)
		store.values.setStoredValue(5, forKey: "level")
		#expect(store[key] == 5, "a change behind the package's back is seen")
	}

	@Test func keysOfOneStoreShareItsRuntime() {
		let store = Defaults.InMemoryStore()
		let a = Defaults.Key<Int>("a", default: 0, suite: store)
		let b = Defaults.Key<String>("b", default: "", suite: store)
		#expect(a.runtime === b.runtime)
		#expect(a.runtime === StoreRuntime.of(store))
		#expect(a.runtime !== StoreRuntime.of(Defaults.InMemoryStore()))
	}

	@Test func aStoreMadeAfterAnotherIsGoneStartsWithARuntimeOfItsOwn() {
		// The allocator often puts the new store at the freed one's address: the runtime must not follow the address.
		for _ in 0..<20 {
			let store = Defaults.InMemoryStore()
			let runtime = StoreRuntime.of(store)
			_ = runtime.addCommitTaps(["a": {}])
			#expect(runtime.listenerCount(forKey: "a").taps == 1, "a fresh store's runtime has only its own tap")
		}
	}
}
