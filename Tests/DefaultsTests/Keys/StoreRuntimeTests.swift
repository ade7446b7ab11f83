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

/// Each store owns its runtime: no table of the process keeps a runtime alive after its store.
@Suite(.scaledTimeLimit(minutes: 1)) struct StoreOwnsItsRuntimeTests {
	@Test func aRuntimeGoesWithThePackagesStore() {
		weak var runtime: StoreRuntime?
		do {
			let store = Defaults.InMemoryStore()
			let key = Defaults.Key<Int>("level", default: 1, suite: store)
			store[key] = 2
			runtime = StoreRuntime.of(store)
			#expect(runtime === key.runtime, "found again from the store")
		}
		#expect(runtime == nil, "nothing but the store (and its keys) holds its runtime")
	}

	@Test func aForeignStoresRuntimeIsFoundAgainAndGoesWithIt() {
		weak var runtime: StoreRuntime?
		do {
			let store = LookupCountingStore()
			runtime = StoreRuntime.of(store)
			#expect(runtime === StoreRuntime.of(store))
		}
		// A store the package did not make keeps its runtime in a table held weakly by the store; the next store
		// that gets a runtime drops the entries of stores that are gone.
		let next = LookupCountingStore()
		_ = StoreRuntime.of(next)
		#expect(runtime == nil)
	}

	@Test func updatesOfDifferentStoresNeverWaitForEachOther() throws {
		// Seventeen stores: had the locks of updates been shared out among sixteen, two of them would share one.
		let keys = (0..<17).map { _ in Defaults.Key<Int>("level", default: 0, suite: Defaults.InMemoryStore()) }
		for (index, key) in keys.enumerated() {
			let others = keys.enumerated().filter { $0.offset != index }.map(\.element)
			let finished = DispatchSemaphore(value: 0)
			var innerFinished = false
			try Defaults.update(key) { value in
				value += 1
				Thread.detachNewThread {
					for other in others {
						_ = try? Defaults.update(other) { $0 += 1 }
					}
					finished.signal()
				}
				innerFinished = finished.wait(timeout: .now() + .seconds(30 * sanitizerSlowdown)) == .success
			}
			#expect(innerFinished, "an update of another store waited for the update of store \(index)")
		}
		#expect(keys.allSatisfy { $0.suite[$0] == 17 })
	}

	@Test func migrationsOfDifferentStoresNeverWaitForEachOther() throws {
		let first = Defaults.InMemoryStore()
		let second = Defaults.InMemoryStore()
		let finished = DispatchSemaphore(value: 0)
		let secondRan = Recorder<Bool>()
		let steps: [Defaults.Migration] = [
			.init(version: 1, "Migrate the other store meanwhile") { _ in
				Thread.detachNewThread {
					_ = try? Defaults.migrate(
						[.init(version: 1, "Note") { _ in secondRan.append(true) }], store: second)
					finished.signal()
				}
				#expect(
					finished.wait(timeout: .now() + .seconds(30 * sanitizerSlowdown)) == .success,
					"the migration of another store waited for this one")
			}
		]
		#expect(try Defaults.migrate(steps, store: first) == 1)
		#expect(secondRan.values == [true])
		#expect(try Defaults.migrationVersion(of: second) == 1)
	}
}
