import Defaults
import DefaultsTesting
import Foundation
import Synchronization
import Testing

// Keys of the standard store, named for these tests alone: the package's other tests share the process and its
// standard store.
extension Defaults.Keys {
	fileprivate static let theme = Key<String>("isolatedDefaultsTheme", default: "light")
	fileprivate static let visits = Key<Int>("isolatedDefaultsVisits", default: 0)
	fileprivate static let recent = Key<[String]>("isolatedDefaultsRecent", default: [])
	// One key of the real store per test that writes it, since the tests run in parallel.
	fileprivate static let untouched = Key<String>("isolatedDefaultsUntouched", default: "default")
	fileprivate static let observed = Key<String>("isolatedDefaultsObserved", default: "default")
	fileprivate static let kept = Key<String>("isolatedDefaultsKept", default: "default")
}

/// What a view model of an app reads at creation, as a preview or a test would build it.
private struct ThemeModel {
	let theme = Defaults[.theme]
	let visits = Defaults[.visits]
}

/// Five times longer under the thread sanitizer (`.ci/tsan` sets the variable), as the package's tests' limits are: a
/// whole-suite sanitizer run on a loaded machine kept these tests, started with every other, waiting for a thread
/// past one minute.
private let suiteTimeLimit = ProcessInfo.processInfo.environment["DEFAULTS_TESTS_UNDER_THREAD_SANITIZER"] == "1" ? 5 : 1

@Suite(.timeLimit(.minutes(suiteTimeLimit))) struct IsolatedDefaultsTests {
	/// Two scopes running at once, each writing its own value to one key of the standard store, each reading its own:
	/// every write happens before either reads.
	@Test func concurrentScopesReadTheirOwnValues() async throws {
		let (aWrote, aWroteSignal) = AsyncStream<Void>.makeStream()
		let (bWrote, bWroteSignal) = AsyncStream<Void>.makeStream()
		async let a: (Int, String) = withIsolatedDefaults {
			Defaults[.visits] = 1
			Defaults[.theme] = "dark"
			aWroteSignal.yield()
			try await Self.first(of: bWrote)
			return (Defaults[.visits], Defaults[.theme])
		}
		async let b: (Int, String) = withIsolatedDefaults {
			Defaults[.visits] = 2
			Defaults[.theme] = "sepia"
			bWroteSignal.yield()
			try await Self.first(of: aWrote)
			return (Defaults[.visits], Defaults[.theme])
		}
		let (inA, inB) = try await (a, b)
		#expect(inA == (1, "dark"))
		#expect(inB == (2, "sepia"))
		#expect(Defaults[.visits] == 0)
		#expect(Defaults[.theme] == "light")
	}

	// Two tests that the runner may run in parallel: each sees only what it wrote.
	@Test(.isolatedDefaults) func oneTestWritesOneValue() async {
		Defaults[.recent] = ["one"]
		await Task.yield()
		#expect(Defaults[.recent] == ["one"])
	}

	@Test(.isolatedDefaults) func anotherTestWritesAnother() async {
		#expect(Defaults[.recent] == [])
		Defaults[.recent] = ["two", "three"]
		await Task.yield()
		#expect(Defaults[.recent] == ["two", "three"])
	}

	/// A test under the trait writes nothing to the standard store: not in memory, and not in its file once flushed.
	@Test(.isolatedDefaults) func theTraitLeavesTheStandardStoreAlone() throws {
		let name = "isolatedDefaultsTrait-\(UUID().uuidString.prefix(8))"
		let key = Defaults.Key<String>(name, default: "none")
		Defaults[key] = "written in the test"
		try Defaults.standardStore.write("written by name", forKey: name + "-byName")
		#expect(Defaults[key] == "written in the test")
		// Registered defaults aside (the key registered "none"), nothing is stored under either name.
		#expect(!Defaults.standardStore.storedKeys().contains(name))
		#expect(Defaults.standardStore.storedValue(forKey: name + "-byName") == nil)
		#expect(Defaults.standardStore.flush())
		let file = Defaults.FileStore.standard.url
		if let data = FileManager.default.contents(atPath: file.path(percentEncoded: false)) {
			let values = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
			#expect(values?[name] == nil)
			#expect(values?[name + "-byName"] == nil)
		}
	}

	@Test(.isolatedDefaults { Defaults[.theme] = "dark" }) func aSeededTestStartsWithItsValues() {
		#expect(Defaults[.theme] == "dark")
		#expect(Defaults[.visits] == 0)
	}

	/// A preview or an XCTest builds what it shows inside the scope, seeded first.
	@Test func aPreviewStyleScopeSeededWithValues() {
		let model = withIsolatedDefaults {
			Defaults[.theme] = "high contrast"
			Defaults[.visits] = 12
			return ThemeModel()
		}
		#expect(model.theme == "high contrast")
		#expect(model.visits == 12)
		#expect(ThemeModel().theme == "light")
	}

	@Test func observersInAScopeHearTheScopesWritesOnly() {
		let heard = Heard()
		defer { Defaults.reset(.observed) }
		withIsolatedDefaults {
			let observation = Defaults.observe(.observed, options: []) { change in
				heard.append(change.newValue)
			}
			defer { observation.invalidate() }
			Defaults[.observed] = "in the scope"
			// Another scope's write and a write outside any scope reach other stores: not heard here.
			withIsolatedDefaults {
				Defaults[.observed] = "in another scope"
			}
			Self.onAThreadOfItsOwn { Defaults[.observed] = "outside" }
			Defaults[.observed] = "again"
		}
		#expect(heard.values == ["in the scope", "again"])
		#expect(Defaults[.observed] == "outside")
	}

	@Test func updatesInAScopeFollowTheScopesStore() async {
		await withIsolatedDefaults {
			Defaults[.visits] = 5
			var values: [Int] = []
			for await visits in Defaults.updates(.visits) {
				values.append(visits)
				if visits == 5 {
					Defaults[.visits] = 6
				} else {
					break
				}
			}
			#expect(values == [5, 6])
		}
		#expect(Defaults[.visits] == 0)
	}

	@Test func resetAndRemoveAllInAScopeReachTheScopesStoreOnly() throws {
		Defaults[.kept] = "kept"
		defer { Defaults.reset(.kept) }
		try withIsolatedDefaults {
			Defaults[.kept] = "scoped"
			Defaults.removeAll()
			#expect(Defaults[.kept] == "default")
			Defaults[.kept] = "scoped"
			Defaults.reset(.kept)
			Defaults.reset(["isolatedDefaultsKept"])
			#expect(Defaults[.kept] == "default")
			try Defaults.update(.kept) { $0 += " updated" }
			#expect(Defaults[.kept] == "default updated")
		}
		#expect(Defaults[.kept] == "kept")
		#expect(Defaults.standardStore.storedValue(forKey: "isolatedDefaultsKept") as? String == "kept")
	}

	/// An app's migrations run in a test's scope migrate the scope's store.
	@Test func migrationsInAScopeMigrateTheScopesStore() throws {
		let versionKey = "isolatedDefaultsVersion"
		let migration = Defaults.Migration(version: 1, .rename(from: "isolatedDefaultsOld", to: "isolatedDefaultsNew"))
		try withIsolatedDefaults {
			try Defaults.standardStore.write(5, forKey: "isolatedDefaultsOld")
			#expect(try Defaults.migrate([migration], versionKey: versionKey) == 1)
			#expect(try Defaults.migrationVersion(versionKey: versionKey) == 1)
			#expect(Defaults[Defaults.Key<Int>("isolatedDefaultsNew", default: 0)] == 5)
		}
		#expect(try Defaults.migrationVersion(versionKey: versionKey) == 0)
		#expect(!Defaults.standardStore.storedKeys().contains("isolatedDefaultsNew"))
	}

	/// Defaults the app registered read in a scope as they read in the app, beneath the test's own values: before the
	/// scope, inside it (the app's setup run by the test), and in another store the scope replaces; a registration on
	/// the scope's own store replaces them for that scope alone.
	@Test func registeredDefaultsReadInAScopeBeneathItsValues() {
		let name = "isolatedDefaultsRegistered-\(UUID().uuidString.prefix(8))"
		let key = Defaults.Key<String>(name, default: "declared")
		let later = Defaults.Key<String>(name + "-later", default: "declared")
		Defaults.standardStore.registerDefaultValues([name: "registered"])
		#expect(Defaults[key] == "registered")
		withIsolatedDefaults {
			#expect(Defaults[key] == "registered")
			Defaults[key] = "written"
			#expect(Defaults[key] == "written")
			Defaults.reset(key)
			#expect(Defaults[key] == "registered")
			// The app's setup, run in the test: registrations are the process's, as they are in the app.
			Defaults.standardStore.registerDefaultValues([later.name: "registered later"])
			#expect(Defaults[later] == "registered later")
			// The test's own registration, on the store its keys read here, is its own.
			key.suite.registerDefaultValues([name: "the test's"])
			#expect(Defaults[key] == "the test's")
			withIsolatedDefaults {
				#expect(Defaults[key] == "the test's", "a nested scope reads what its enclosing scope reads")
			}
		}
		withIsolatedDefaults {
			#expect(Defaults[key] == "registered")
		}
		#expect(Defaults[key] == "registered")

		let named = Defaults.InMemoryStore()
		let inNamed = Defaults.Key<Int>("count", default: 0, suite: named)
		named.registerDefaultValues(["count": 5])
		withIsolatedDefaults(alsoIsolating: [named]) {
			#expect(Defaults[inNamed] == 5)
			Defaults[inNamed] = 6
			#expect(Defaults[inNamed] == 6)
		}
		#expect(Defaults[inNamed] == 5)
	}

	/// Another store, named by choice, is replaced too; one not named is not.
	@Test func otherStoresAreReplacedWhenNamed() throws {
		let named = Defaults.InMemoryStore()
		let other = Defaults.InMemoryStore()
		let inNamed = Defaults.Key<Int>("count", default: 0, suite: named)
		let inOther = Defaults.Key<Int>("count", default: 0, suite: other)
		withIsolatedDefaults(alsoIsolating: [named]) {
			Defaults[inNamed] = 3
			Defaults[inOther] = 4
			#expect(Defaults[inNamed] == 3)
		}
		#expect(Defaults[inNamed] == 0)
		#expect(named.storedKeys().isEmpty)
		#expect(Defaults[inOther] == 4)
	}

	/// Outside a scope nothing changed: a key read before, during and after another task's scope reads the standard
	/// store, through its cache.
	@Test func outsideAScopeReadsAndWritesTheStandardStore() {
		Defaults[.untouched] = "outside"
		defer { Defaults.reset(.untouched) }
		#expect(Defaults[.untouched] == "outside")
		withIsolatedDefaults {
			#expect(Defaults[.untouched] == "default")
			Defaults[.untouched] = "inside"
			// A thread of its own is outside the scope.
			let onAnotherThread = Self.onAThreadOfItsOwn { Defaults[.untouched] }
			#expect(onAnotherThread == "outside")
		}
		#expect(Defaults[.untouched] == "outside")
		#expect(Defaults.standardStore.storedValue(forKey: "isolatedDefaultsUntouched") as? String == "outside")
	}

	/// What `body` returns, run on a thread of its own (outside every scope), within 20 seconds.
	@discardableResult
	static func onAThreadOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () -> Result) -> Result? {
		let result = Mutex<Result?>(nil)
		let done = DispatchSemaphore(value: 0)
		Thread {
			let value = body()
			result.withLock { $0 = value }
			done.signal()
		}.start()
		#expect(done.wait(timeout: .now() + 20) == .success, "the thread did not finish")
		return result.withLock { $0 }
	}

	/// The first element of `stream`, within 20 seconds.
	static func first(of stream: AsyncStream<Void>) async throws {
		try await withThrowingTaskGroup(of: Bool.self) { group in
			group.addTask {
				for await _ in stream {
					return true
				}
				return false
			}
			group.addTask {
				try await Task.sleep(for: .seconds(20))
				return false
			}
			let arrived = try await group.next() ?? false
			group.cancelAll()
			try #require(arrived, "the other scope never signalled")
		}
	}
}

/// Values heard by an observer.
private final class Heard: Sendable {
	private let state = Mutex<[String]>([])
	var values: [String] { state.withLock { $0 } }
	func append(_ value: String) { state.withLock { $0.append(value) } }
}

/// On a suite, the trait gives each test a store of its own, seeded afresh: what one test writes, the next never reads.
@Suite(.isolatedDefaults { Defaults[.visits] = 7 }) struct IsolatedDefaultsSuiteTests {
	@Test func oneTestOfTheSuite() {
		#expect(Defaults[.visits] == 7)
		Defaults[.visits] = 8
	}

	@Test func anotherTestOfTheSuite() {
		#expect(Defaults[.visits] == 7)
		Defaults[.visits] = 9
	}

	@Test(arguments: [1, 2]) func eachCaseOfAParameterisedTest(increment: Int) {
		#expect(Defaults[.visits] == 7)
		Defaults[.visits] += increment
		#expect(Defaults[.visits] == 7 + increment)
	}
}

/// A catalog's check for keys it misses works under the trait too: it compares the stores the keys were declared in.
@Test(.isolatedDefaults) func aCatalogCheckUnderTheTraitFindsItsKeys() {
	let key = Defaults.Key<Int>("isolatedDefaultsCatalogued", default: 0)
	let catalog = Defaults.Catalog([key])
	#expect(!catalog.uncataloguedKeys().contains("isolatedDefaultsCatalogued"))
}
