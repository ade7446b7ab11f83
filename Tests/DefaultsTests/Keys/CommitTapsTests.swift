import Synchronization
import Testing

@testable import Defaults

extension StoreRuntime {
	/// Taps that call `handler` with the name of each key of `names` written.
	func addCommitTaps(names: Set<String>, handler: @escaping @Sendable (String) -> Void) -> @Sendable () -> Void {
		addCommitTaps(Dictionary(uniqueKeysWithValues: names.map { name in (name, { @Sendable in handler(name) }) }))
	}
}

/// Commit taps hear the names of keys written through the package, also inside `withoutPropagation`, and nothing
/// once removed.
@Suite struct CommitTapsTests {
	@Test func aTapHearsWritesOfItsKeysInItsStoreUntilRemoved() throws {
		let store = Defaults.InMemoryStore()
		let other = Defaults.InMemoryStore()
		let heard = LockedState<[String]>([])
		let remove = StoreRuntime.of(store).addCommitTaps(names: ["a", "b"]) { name in
			heard.withLock { $0.append(name) }
		}
		let a = Defaults.Key<Int>("a", default: 0, suite: store)
		store[a] = 1
		try store.write(2, forKey: "b")
		try store.write(3, forKey: "c")
		try other.write(4, forKey: "a")
		Defaults.withoutPropagation { store[a] = 5 }
		a.reset()
		#expect(heard.withLock { $0 } == ["a", "b", "a", "a"])
		remove()
		store[a] = 6
		#expect(heard.withLock { $0 }.count == 4)
	}

	@Test func tapsOnOneStoreHearInTheOrderAddedAndRemovingOneLeavesTheOthers() throws {
		let store = Defaults.InMemoryStore()
		let heard = LockedState<[String]>([])
		let removeFirst = StoreRuntime.of(store).addCommitTaps(names: ["a"]) { name in
			heard.withLock { $0.append("1:\(name)") }
		}
		let removeSecond = StoreRuntime.of(store).addCommitTaps(names: ["a", "b"]) { name in
			heard.withLock { $0.append("2:\(name)") }
		}
		defer { removeSecond() }
		try store.write(1, forKey: "a")
		try store.write(2, forKey: "b")
		#expect(heard.withLock { $0 } == ["1:a", "2:a", "2:b"])
		removeFirst()
		removeFirst()
		try store.write(3, forKey: "a")
		#expect(heard.withLock { $0 } == ["1:a", "2:a", "2:b", "2:a"])
		#expect(StoreRuntime.of(store).listenerCount(forKey: "a").taps == 1)
	}
}
