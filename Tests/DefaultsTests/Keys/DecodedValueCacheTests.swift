import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// Reading an unchanged stored form returns the last decoded value; a read is always what a fresh decode gives.
@Suite(.scaledTimeLimit(minutes: 1)) struct DecodedValueCacheTests {
	@Test func anUnchangedStoredFormIsNotDecodedAgain() {
		let store = Defaults.InMemoryStore()
		let counter = DecodeCounter()
		let key = Defaults.Key<Counted>("counted", default: Counted(value: 0), suite: store, bridge: counter.bridge)
		store[key] = Counted(value: 1)
		#expect(store[key].value == 1)
		#expect(store[key].value == 1)
		#expect(store[key].value == 1)
		#expect(counter.decodes == 1)
	}

	@Test func aWriteOfAnotherKeyDoesNotInvalidateThisOne() {
		let store = Defaults.InMemoryStore()
		let counter = DecodeCounter()
		let key = Defaults.Key<Counted>("counted", default: Counted(value: 0), suite: store, bridge: counter.bridge)
		let other = Defaults.Key<Int>("other", default: 0, suite: store)
		store[key] = Counted(value: 1)
		_ = store[key]
		store[other] = 5
		_ = store[key]
		#expect(counter.decodes == 1)
	}

	@Test(arguments: ["write", "reset", "removeAll", "seam"])
	func everyKindOfChangeIsSeen(change: String) throws {
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<Window>("window", default: Window(width: 0, height: 0, title: "default"), suite: store)
		store[key] = Window(width: 1, height: 1, title: "first")
		#expect(store[key].title == "first")
		switch change {
		case "write": store[key] = Window(width: 2, height: 2, title: "second")
		case "reset": key.reset()
		case "removeAll": Defaults.removeAll(suite: store)
		default: try store.write("{\"height\":3,\"title\":\"second\",\"width\":3}", forKey: "window")
		}
		#expect(store[key].title == (change == "reset" || change == "removeAll" ? "default" : "second"))
	}

	@Test func anotherKeysWriteMovesTheFileStoresCountButDoesNotDecodeThisKeyAgain() throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.FileStore.at(folder.file("cache.plist"))
		// Written now, so that no write-behind flush recreates the folder after the test has removed it.
		defer { store.flush() }
		let counter = DecodeCounter()
		let key = Defaults.Key<Counted>("counted", default: Counted(value: 0), suite: store, bridge: counter.bridge)
		let other = Defaults.Key<Int>("other", default: 0, suite: store)
		store[key] = Counted(value: 1)
		_ = store[key]
		store[other] = 2
		_ = store[key]
		_ = store[key]
		#expect(counter.decodes == 1, "another key's write moves the count, not this key's stored form")
		store[key] = Counted(value: 3)
		#expect(store[key].value == 3)
		#expect(counter.decodes == 2)
	}

	@Test func storesThatDoNotReportEveryChangeCompareTheStoredForm() {
		let suite = UserDefaultsStoreTests.Suite()
		let counter = DecodeCounter()
		let key = Defaults.Key<Counted>(
			"counted", default: Counted(value: 0), suite: suite.defaults, bridge: counter.bridge)
		suite.defaults[key] = Counted(value: 1)
		_ = suite.defaults[key]
		_ = suite.defaults[key]
		#expect(counter.decodes == 1)
		suite.defaults.set(2, forKey: "counted")
		#expect(suite.defaults[key].value == 2, "a write behind the package's back is seen")
	}

	@Test func cachedReadsAlwaysEqualAFreshDecodeUnderConcurrentWrites() async {
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<Window>("window", default: Window(width: 0, height: 0, title: "0"), suite: store)
		await withTaskGroup(of: Void.self) { group in
			group.addTask {
				for index in 1...2_000 {
					store[key] = Window(width: index, height: index, title: "\(index)")
				}
			}
			for _ in 0..<2 {
				group.addTask {
					for _ in 0..<2_000 {
						let read = store[key]
						// Every value ever written is self-consistent: a torn or stale-mixed read would not be.
						#expect(read.width == read.height && read.title == "\(read.width)")
					}
				}
			}
		}
		let fresh = Defaults.Key<Window>("window", default: Window(width: 0, height: 0, title: ""), suite: store)
		#expect(store[key] == store[fresh], "the cached value equals a fresh key's decode")
		#expect(store[key] == Window(width: 2_000, height: 2_000, title: "2000"))
	}
}

struct Counted: Equatable, Defaults.Serializable {
	var value: Int
	static let bridge = DecodeCounter().bridge
}

/// A bridge that counts how often it decodes.
final class DecodeCounter: @unchecked Sendable {
	private let lock = NSLock()
	private var count = 0

	var decodes: Int { lock.withLock { count } }

	var bridge: Defaults.AnyBridge<Counted> {
		.init(CountingBridge(counter: self))
	}

	fileprivate func increment() {
		lock.withLock { count += 1 }
	}
}

private struct CountingBridge: Defaults.Bridge {
	let counter: DecodeCounter

	func serialize(_ value: Counted?) -> Int? { value?.value }

	func deserialize(_ object: Int?) -> Counted? {
		counter.increment()
		return object.map(Counted.init)
	}
}
