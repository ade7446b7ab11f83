import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

@testable import Defaults

/// Plain bits of 16 bytes, read through the sequence lock: a torn read would break `high == low * 3`.
private struct Span: Codable, Hashable, Sendable, Defaults.Serializable {
	var low: Int
	var high: Int

	init(_ low: Int) {
		self.low = low
		self.high = low &* 3
	}

	var isWhole: Bool { high == low &* 3 }
}

/// More than the sequence lock's eight words: read under the cache's lock.
private struct Wide: Codable, Hashable, Sendable, Defaults.Serializable {
	var a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0
}

/// Reads answered from a key's remembered value (see `KeyReadCache`): never stale after a change from any source,
/// never torn under concurrent writes.
@Suite struct KeyReadCacheTests {
	@Test func storesThatReportEveryChangeAreCounted() throws {
		#expect(StoreRuntime.of(Defaults.InMemoryStore()).changeCounter != nil)
		let folder = try TemporaryDirectory()
		#expect(StoreRuntime.of(Defaults.FileStore.at(folder.file("a.plist"))).changeCounter != nil)
		#expect(StoreRuntime.of(UserDefaults(suiteName: "KeyReadCacheTests")!).changeCounter == nil)
	}

	@Test func bitwiseValuesUseTheSequenceLockAndOthersTheLock() {
		#expect(KeyReadCache<Int>.isBitwise)
		#expect(KeyReadCache<Double>.isBitwise)
		#expect(KeyReadCache<Int?>.isBitwise)
		#expect(KeyReadCache<Span>.isBitwise)
		#expect(!KeyReadCache<String>.isBitwise)
		#expect(!KeyReadCache<Window>.isBitwise)
	}

	@Test func valuesWithReferencesOfUpToEightWordsUseTheSequenceLock() {
		#expect(KeyReadCache<Int>.usesSequenceLock)
		#expect(KeyReadCache<String>.usesSequenceLock)
		#expect(KeyReadCache<Window>.usesSequenceLock)
		#expect(KeyReadCache<[String]>.usesSequenceLock)
		#expect(!KeyReadCache<Wide>.usesSequenceLock)
	}

	/// A value holding references is kept by the cache once published, up to the limit; after it the key's values
	/// are read under the lock, and every read still finds the value remembered last.
	@Test func valuesWithReferencesAreKeptUpToTheLimitAndReadUnderTheLockAfterIt() {
		let cache = KeyReadCache<Window>()
		let limit = KeyReadCache<Window>.publishedLimit
		for round in 0..<(limit + 5) {
			let window = Window(width: round, height: round, title: String(repeating: "t", count: 40) + "\(round)")
			cache.remember(window, at: UInt64(round))
			#expect(cache.value(at: UInt64(round)) == window)
			#expect(cache.value(at: UInt64(round) + 100) == nil)
			let isPublished = cache.publishedValue(at: UInt64(round)) != nil
			#expect(isPublished == (round < limit))
		}
		#expect(cache.lock.withLock { _ in cache.published.count } == limit)
		// A bitwise value is never kept.
		let plain = KeyReadCache<Span>()
		for round in 0..<(limit + 5) {
			plain.remember(Span(round), at: UInt64(round))
			#expect(plain.publishedValue(at: UInt64(round)) == Span(round))
		}
		#expect(plain.lock.withLock { _ in plain.published.isEmpty })
	}

	/// A large text or data, or a collection, is never kept for readers: eight of them would stay alive as long as the
	/// key. Small ones are kept.
	@Test func largeValuesAreReadUnderTheLockAndNeverKept() {
		let data = KeyReadCache<Data>()
		for round in 0..<3 {
			let value = Data(repeating: UInt8(round), count: 4_096)
			data.remember(value, storedForm: value, at: UInt64(round))
			#expect(data.value(at: UInt64(round)) == value)
			#expect(data.publishedValue(at: UInt64(round)) == nil)
		}
		#expect(data.lock.withLock { _ in data.published.isEmpty })
		let list = KeyReadCache<[String]>()
		list.remember(["a"], storedForm: ["a"], at: 1)
		#expect(list.value(at: 1) == ["a"])
		#expect(list.lock.withLock { _ in list.published.isEmpty })
		let text = KeyReadCache<String>()
		text.remember("short", storedForm: "short", at: 1)
		#expect(text.publishedValue(at: 1) == "short")
		#expect(text.lock.withLock { _ in text.published.count } == 1)
	}

	/// Values with heap-allocated strings published while other threads read: every value read is whole (its title
	/// names its width) and alive. Many caches, so that readers meet the first publications, which go through the
	/// sequence lock, rather than the lock the cache falls back to after its limit.
	@Test func sequenceLockNeverHandsOutATornOrFreedValueWithReferences() async {
		let caches = (0..<200).map { _ in KeyReadCache<Window>() }
		let bad = await withTaskGroup(of: Int.self) { group in
			group.addTask {
				for cache in caches {
					for round in 0..<12 {
						let title = String(repeating: "w", count: 30) + "\(round)"
						cache.remember(Window(width: round, height: round &* 3, title: title), at: UInt64(round % 3))
					}
				}
				return 0
			}
			for _ in 0..<2 {
				group.addTask {
					var bad = 0
					for cache in caches {
						for round in 0..<2_000 {
							if let window = cache.value(at: UInt64(round % 3)),
								window.height != window.width &* 3 || !window.title.hasSuffix("\(window.width)")
									|| window.width % 3 != round % 3
							{
								bad += 1
							}
						}
					}
					return bad
				}
			}
			return await group.reduce(0, +)
		}
		#expect(bad == 0)
	}

	@Test func noReadIsStaleAfterAChangeFromThisProcessResetRegistrationOrMigration() throws {
		let store = Defaults.InMemoryStore()
		let count = Defaults.Key<Int>("count", default: 1, suite: store)
		let window = Defaults.Key<Window>("window", default: Window(width: 1, height: 1, title: "a"), suite: store)
		let span = Defaults.Key<Span>("span", default: Span(1), suite: store)
		#expect(store[count] == 1)
		#expect(store[window].width == 1)
		#expect(store[span] == Span(1))

		store[count] = 2
		store[window] = Window(width: 2, height: 2, title: "b")
		store[span] = Span(2)
		#expect(store[count] == 2)
		#expect(store[window].width == 2)
		#expect(store[span] == Span(2))

		// Through the store's own primitive, past the subscript.
		store.setStoredValue(3, forKey: "count")
		#expect(store[count] == 3)

		count.reset()
		span.reset()
		#expect(store[count] == 1)
		#expect(store[span] == Span(1))

		store.registerDefaultValues(["count": 9])
		#expect(store[count] == 9)

		_ = try Defaults.migrate(
			[Defaults.Migration(version: 1) { store in try store.write(11, forKey: "count") }], store: store)
		#expect(store[count] == 11)

		store.removeValue(forKey: "count")
		#expect(store[count] == 9)
	}

	@Test func noReadIsStaleAfterAnotherProcessChangesTheFile() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("settings.plist")
		let store = Defaults.FileStore.at(url)
		let count = Defaults.Key<Int>("count", default: 1, suite: store)
		let window = Defaults.Key<Window>("window", default: Window(width: 1, height: 1, title: "a"), suite: store)
		store[count] = 2
		store[window] = Window(width: 2, height: 2, title: "b")
		#expect(store.flush())
		#expect(store[count] == 2)
		#expect(store[window].width == 2)

		let json = try String(decoding: JSONEncoder().encode(Window(width: 5, height: 5, title: "c")), as: UTF8.self)
		let data = try PropertyListSerialization.data(
			fromPropertyList: ["count": 5, "window": json] as [String: Any], format: .binary, options: 0)
		try data.write(to: url, options: .atomic)
		// A flush picks up what changed elsewhere, as the file watcher does.
		#expect(store.flush())
		#expect(store[count] == 5)
		#expect(store[window].width == 5)
	}

	@Test func aDynamicDefaultRunsOnEveryRead() {
		let store = Defaults.InMemoryStore()
		let runs = LockedState(0)
		let key = Defaults.Key<Int>("dynamic", suite: store) {
			runs.withLock {
				$0 += 1; return $0
			}
		}
		#expect(store[key] == 1)
		#expect(store[key] == 2)
	}

	/// The sequence lock alone, with nothing but atomics between threads: what the thread sanitizer can check
	/// (`swift test --sanitize=thread --filter KeyReadCacheTests/sequenceLock`).
	@Test func sequenceLockNeverHandsOutATornValue() async {
		let cache = KeyReadCache<Span>()
		let rounds = 20_000
		let bad = await withTaskGroup(of: Int.self) { group in
			for writer in 0..<2 {
				group.addTask {
					for round in 0..<rounds {
						let value = writer * rounds + round
						cache.remember(Span(value), at: UInt64(value % 4))
					}
					return 0
				}
			}
			for _ in 0..<2 {
				group.addTask {
					var bad = 0
					for round in 0..<rounds {
						if let span = cache.value(at: UInt64(round % 4)), !span.isWhole || span.low % 4 != round % 4 {
							bad += 1
						}
					}
					return bad
				}
			}
			return await group.reduce(0, +)
		}
		#expect(bad == 0)
	}

	/// Many threads write and read the same keys; every value read is one that was written (or the default), never
	/// a mix of two. Bounded: a fixed number of operations per thread.
	@Test func concurrentReadsSeeOnlyWrittenValues() async {
		let store = Defaults.InMemoryStore()
		let count = Defaults.Key<Int>("count", default: 0, suite: store)
		let span = Defaults.Key<Span>("span", default: Span(0), suite: store)
		let name = Defaults.Key<String>("name", default: "0", suite: store)
		let rounds = 2_000
		let bad = await withTaskGroup(of: Int.self) { group in
			for writer in 0..<3 {
				group.addTask {
					for round in 0..<rounds {
						let value = writer * rounds + round
						store[count] = value * 2
						store[span] = Span(value)
						store[name] = String(value)
					}
					return 0
				}
			}
			for _ in 0..<3 {
				group.addTask {
					var bad = 0
					for _ in 0..<(rounds * 3) {
						if !store[count].isMultiple(of: 2) { bad += 1 }
						if !store[span].isWhole { bad += 1 }
						if Int(store[name]) == nil { bad += 1 }
					}
					return bad
				}
			}
			return await group.reduce(0, +)
		}
		#expect(bad == 0)
		#expect(store[count] >= 0)
	}
}
