import Defaults
import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

@Suite(.scaledTimeLimit(minutes: 1)) struct KeyTests {
	let store = Defaults.InMemoryStore()

	@Test func aKeyReadsItsDefaultUntilWritten() {
		let quality = Defaults.Key<Double>("quality", default: 0.8, suite: store)
		#expect(store[quality] == 0.8)
		store[quality] = 0.5
		#expect(store[quality] == 0.5)
		store[quality] += 0.1
		#expect(store[quality] == 0.6)
	}

	@Test func resetBringsTheDefaultBack() {
		let quality = Defaults.Key<Double>("quality", default: 0.8, suite: store)
		store[quality] = 0.2
		Defaults.reset(quality)
		#expect(store[quality] == 0.8)
		#expect(store.storedKeys().isEmpty)
	}

	@Test func resetTakesVariadicKeysArraysAndNames() {
		let first = Defaults.Key<Int>("first", default: 1, suite: store)
		let second = Defaults.Key<Int>("second", default: 2, suite: store)
		let third = Defaults.Key<Int>("third", default: 3, suite: store)
		store[first] = 10
		store[second] = 20
		store[third] = 30
		Defaults.reset(first, second)
		#expect(store[first] == 1 && store[second] == 2 && store[third] == 30)
		store[first] = 10
		Defaults.reset([first, third])
		#expect(store[first] == 1 && store[third] == 3)
		store[second] = 20
		Defaults.reset("second", suite: store)
		#expect(store[second] == 2)
	}

	@Test func removeAllEmptiesTheStoreButKeepsDefaults() {
		let volume = Defaults.Key<Int>("volume", default: 5, suite: store)
		let name = Defaults.Key<String?>("name", suite: store)
		store[volume] = 9
		store[name] = "Ada"
		Defaults.removeAll(suite: store)
		#expect(store.storedKeys().isEmpty)
		#expect(store[volume] == 5)
		#expect(store[name] == nil)
	}

	@Test func anOptionalKeyDefaultsToNilAndNilRemovesTheValue() {
		let name = Defaults.Key<String?>("name", suite: store)
		#expect(store[name] == nil)
		store[name] = "Ada"
		#expect(store.storedValue(forKey: "name") as? String == "Ada")
		store[name] = nil
		#expect(store.storedValue(forKey: "name") == nil)
		#expect(store.storedKeys().isEmpty)
	}

	@Test func aDynamicDefaultIsEvaluatedAtEachFallbackAndNeverRegistered() {
		let counter = Counter()
		let key = Defaults.Key<Int>("dynamic", suite: store) { counter.next() }
		#expect(store[key] == 1)
		#expect(store[key] == 2)
		#expect(store.storedValue(forKey: "dynamic") == nil)
		store[key] = 10
		#expect(store[key] == 10)
		#expect(counter.count == 2)
	}

	@Test func aStaticDefaultIsRegisteredWithTheStore() {
		_ = Defaults.Key<[String]>("tags", default: ["a"], suite: store)
		#expect(store.storedValue(forKey: "tags") as? [String] == ["a"])
		#expect(store.storedKeys().isEmpty, "a registered default is not a stored value")
	}

	@Test func isDefaultValueComparesTheCurrentValue() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		#expect(level.isDefaultValue)
		store[level] = 2
		#expect(!level.isDefaultValue)
		store[level] = 1
		#expect(level.isDefaultValue)
	}

	@Test func keysCanLiveInDefaultsKeysAndBeUsedWithImplicitMemberSyntax() {
		Defaults.reset(.testVolume)
		#expect(Defaults[.testVolume] == 0.8)
		Defaults[.testVolume] = 0.3
		#expect(Defaults[.testVolume] == 0.3)
		Defaults[.testVolume] += 0.1
		#expect(abs(Defaults[.testVolume] - 0.4) < 1e-9)
		Defaults.reset(.testVolume)
		#expect(Defaults[.testVolume] == 0.8)
	}

	@Test func theStoreSubscriptReadsThroughAnyStore() {
		let other = Defaults.InMemoryStore()
		let isUnicorn = Defaults.Key<Bool>("isUnicorn", default: true, suite: store)
		other[isUnicorn] = false
		#expect(other[isUnicorn] == false)
		#expect(store[isUnicorn] == true, "the key's own store is untouched")
	}

	@Test func keysAreSendable() async {
		let key = Defaults.Key<Int>("shared", default: 0, suite: store)
		await withTaskGroup(of: Void.self) { group in
			for index in 0..<8 {
				group.addTask { [store] in store[key] = index }
			}
		}
		#expect((0..<8).contains(store[key]))
	}

	@Test(arguments: ["naïve", "@at", "dotted.name"])
	func aKeyNameThatBreaksARuleIsReportedOnceWithoutCrashing(name: String) {
		FailureRecorder.start()
		let unique = name + uniqueKeyName()
		_ = Defaults.Key<Int>(unique, default: 0, suite: store)
		_ = Defaults.Key<Int>(unique, default: 0, suite: store)
		let failures = FailureRecorder.failures(forKey: unique)
		#expect(failures.count == 1)
		#expect(failures.first?.reason == .invalidKeyName)
		#expect(failures.first?.message.contains(unique) == true)
	}

	@Test func aValidKeyNameIsNotReported() {
		FailureRecorder.start()
		let name = uniqueKeyName("valid-name_1")
		_ = Defaults.Key<Int>(name, default: 0, suite: store)
		#expect(FailureRecorder.failures(forKey: name).isEmpty)
	}
}

extension Defaults.Keys {
	fileprivate static let testVolume = Key<Double>("defaultsTestVolume", default: 0.8)
}

/// A thread-safe counter for dynamic defaults.
private final class Counter: Sendable {
	private let value = LockedState(0)
	var count: Int { value.withLock { $0 } }
	func next() -> Int {
		value.withLock {
			$0 += 1; return $0
		}
	}
}

@Test func keysCanBeSpelledAsTheWellKnownPackagesAnyKey() {
	let store = Defaults.InMemoryStore()
	let first = Defaults.Key<Int>("first", default: 1, suite: store)
	store[first] = 2
	let keys: [Defaults._AnyKey] = [first]
	Defaults.reset(keys)
	#expect(store[first] == 1)
}

@Suite(.scaledTimeLimit(minutes: 1)) struct WellKnownSpellingTests {
	@Test func codeWrittenForTheWellKnownPackageCompiles() {
		FailureRecorder.start()
		let name = uniqueKeyName("iCloud")
		let synced = Defaults.Key<Bool>(name, default: false, suite: .standard, iCloud: true)
		// `.standard` is the standard store: `UserDefaults.standard` on Apple platforms, the file store on Linux.
		#expect(synced.suite === Defaults.standardStore)
		// Registered for sync; with no remote configured it is stored locally, and nothing is reported.
		#expect(FailureRecorder.failures(forKey: name).isEmpty)

		let store = Defaults.InMemoryStore()
		let quality = Defaults.Key<Double>("quality", default: 0.8, suite: store)
		store[quality] = 0.1
		Defaults.reset(["quality"], suite: store)
		#expect(store[quality] == 0.8)
	}

	@Test func suiteStandardIsTheStoreKeysUseWhenNoneIsNamed() {
		let named = Defaults.Key<Int>(uniqueKeyName(), default: 0, suite: .standard)
		let unnamed = Defaults.Key<Int>(named.name, default: 0)
		#expect(named.suite === unnamed.suite)
	}

	@Test func aCodableBridgeNeedsOnlyItsValueType() {
		let store = Defaults.InMemoryStore()
		let key = Defaults.Key<Window>(
			"window", default: Window(width: 0, height: 0, title: ""), suite: store, bridge: WindowBridge())
		store[key] = Window(width: 1, height: 2, title: "t")
		#expect(store.storedValue(forKey: "window") as? String == "{\"height\":2,\"title\":\"t\",\"width\":1}")
		#expect(store[key] == Window(width: 1, height: 2, title: "t"))
	}
}

private struct WindowBridge: Defaults.CodableBridge {
	typealias Value = Window
}
