import Foundation
import Synchronization
import Testing

@testable import Defaults

/// A store's report of changes made outside the package (``Defaults/Store/reportOutsideChanges(_:)``), simulated
/// on an in-memory store; the file store's real reports are tested with a second process in
/// `CrossProcessObservationTests`.
@Suite("outside changes", .scaledTimeLimit(minutes: 1))
struct OutsideChangeTests {
	let store = Defaults.InMemoryStore()

	@Test func observersOfTheChangedKeysHearTheNewValues() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let name = Defaults.Key<String>("name", default: "", suite: store)
		let volume = Defaults.Key<Int>("volume", default: 1, suite: store)
		let changes = Recorder<String>()
		let observations = [
			Defaults.observe(level, options: []) { changes.append("level \($0.oldValue)->\($0.newValue)") },
			Defaults.observe(name, options: []) { changes.append("name \($0.oldValue)->\($0.newValue)") },
			Defaults.observe(volume, options: []) { changes.append("volume \($0.newValue)") },
		]
		Defaults[level] = 2
		// What a store does when it reloads: take the new values in, then report them.
		store.setStoredValue(3, forKey: "level")
		store.setStoredValue("b", forKey: "name")
		store.reportOutsideChanges(["level", "name", "unobserved"])
		store.removeStoredValue(forKey: "level")
		store.reportOutsideChanges(["level"])
		#expect(changes.values == ["level 1->2", "level 2->3", "name ->b", "level 3->1"])
		observations.forEach { $0.invalidate() }
	}

	@Test func outsideChangesAreHeardInsideWithoutPropagation() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Int>()
		let observation = Defaults.observe(level, options: []) { changes.append($0.newValue) }
		Defaults.withoutPropagation {
			store.setStoredValue(4, forKey: "level")
			store.reportOutsideChanges(["level"])
		}
		#expect(changes.values == [4])
		observation.invalidate()
	}

	@Test func updatesSequencesHearOutsideChanges() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		var iterator = Defaults.updates(level, initial: false).makeAsyncIterator()
		store.setStoredValue(6, forKey: "level")
		store.reportOutsideChanges(["level"])
		#expect(await iterator.next() == 6)
	}
}

/// A store with a change feed of its own: its feed reports through the seam's one entry point.
private final class FeedStore: InMemoryBackedStore, @unchecked Sendable {
	let values = Defaults.InMemoryStore()

	/// What the backend's feed would do: change a value behind the package's back and say so.
	func changeFromOutside(_ value: Int, forKey key: String) {
		values.setStoredValue(value, forKey: key)
		reportOutsideChanges([key])
	}

	/// The observers the package holds for `key` of this store.
	func observerCount(forKey key: String) -> Int {
		StoreRuntime.of(self).listenerCount(forKey: key).observers
	}
}

/// The store's runtime holds each key's observers; there is no per-store subscription to count, so a key observed
/// twice, or by several observations, never leaves one behind (it once did: `observe(keys: a, a)` subscribed twice and
/// released once).
@Suite(.scaledTimeLimit(minutes: 1)) struct OutsideChangeSeamTests {
	@Test func aStoresOwnChangeFeedReachesObservers() {
		let store = FeedStore()
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		var seen: [Int] = []
		let observation = Defaults.observe(level, options: []) { seen.append($0.newValue) }
		#expect(store.observerCount(forKey: "level") == 1, "the runtime holds the observer")
		store.changeFromOutside(7, forKey: "level")
		#expect(seen == [7])
		observation.invalidate()
		#expect(store.observerCount(forKey: "level") == 0, "the observer ended with the observation")
		store.changeFromOutside(8, forKey: "level")
		#expect(seen == [7])
		#expect(store[level] == 8, "the outside change is read, with no observer left")
	}

	@Test func theRuntimeHoldsOneEntryPerObservationOfAKey() {
		let store = FeedStore()
		let a = Defaults.Key<Int>("a", default: 0, suite: store)
		let b = Defaults.Key<Int>("b", default: 0, suite: store)
		let first = Defaults.observe(a) { _ in }
		let second = Defaults.observe(b) { _ in }
		let third = Defaults.observe(a) { _ in }
		#expect(store.observerCount(forKey: "a") == 2)
		#expect(store.observerCount(forKey: "b") == 1)
		first.invalidate()
		second.invalidate()
		#expect(store.observerCount(forKey: "a") == 1, "a is still observed")
		#expect(store.observerCount(forKey: "b") == 0)
		third.invalidate()
		#expect(store.observerCount(forKey: "a") == 0)
	}

	@Test func aKeyNamedTwiceInOneObservationReleasesTheStoresFeedWhenItEnds() {
		let store = FeedStore()
		let a = Defaults.Key<Int>("a", default: 0, suite: store)
		var heard = 0
		let observation = Defaults.observe(keys: a, a, options: []) { heard += 1 }
		#expect(store.observerCount(forKey: "a") == 1)
		store.changeFromOutside(1, forKey: "a")
		#expect(heard == 1, "one observation of a key named twice hears a change once")
		observation.invalidate()
		#expect(store.observerCount(forKey: "a") == 0, "one observation, one entry to release")
	}

	@Test func aKeyNamedTwiceInOneUpdatesSequenceReleasesTheStoresFeedWhenItEnds() async {
		let store = FeedStore()
		let a = Defaults.Key<Int>("a", default: 0, suite: store)
		do {
			var iterator = Defaults.updates([a, a], initial: false).makeAsyncIterator()
			store.changeFromOutside(1, forKey: "a")
			#expect(await iterator.next() != nil)
			#expect(store.observerCount(forKey: "a") == 1)
		}
		// The sequence's subscription ends when its last iterator is released, on the iterator's own schedule. The
		// limit is for a subscription never released; a passing test returns as soon as it is.
		let isReleased = await eventually(timeout: .seconds(30).scaledForSanitizer) {
			store.observerCount(forKey: "a") == 0
		}
		#expect(isReleased, "one sequence, one subscription to release")
	}
}
