import Foundation
import Testing

@testable import Defaults

/// A store's report of changes made outside the package (``Defaults/Store/didChangeExternally(keys:)``), simulated
/// on an in-memory store; the file store's real reports are tested with a second process in
/// `CrossProcessObservationTests`.
@Suite("external changes", .timeLimit(.minutes(1)))
struct ExternalChangeTests {
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
		store.didChangeExternally(keys: ["level", "name", "unobserved"])
		store.removeStoredValue(forKey: "level")
		store.didChangeExternally(keys: ["level"])
		#expect(changes.values == ["level 1->2", "level 2->3", "name ->b", "level 3->1"])
		observations.forEach { $0.invalidate() }
	}

	@Test func outsideChangesAreHeardInsideWithoutPropagation() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Int>()
		let observation = Defaults.observe(level, options: []) { changes.append($0.newValue) }
		Defaults.withoutPropagation {
			store.setStoredValue(4, forKey: "level")
			store.didChangeExternally(keys: ["level"])
		}
		#expect(changes.values == [4])
		observation.invalidate()
	}

	@Test func updatesSequencesHearOutsideChanges() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		var iterator = Defaults.updates(level, initial: false).makeAsyncIterator()
		store.setStoredValue(6, forKey: "level")
		store.didChangeExternally(keys: ["level"])
		#expect(await iterator.next() == 6)
	}
}
