import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// `UserDefaults` as a store, with Linux Foundation's failures kept out.
@Suite struct UserDefaultsStoreTests {
	/// A suite of its own, removed when the test ends.
	final class Suite {
		let name = uniqueKeyName("defaults-tests")
		let defaults: UserDefaults

		init() {
			defaults = UserDefaults(suiteName: name)!
		}

		deinit {
			defaults.removePersistentDomain(forName: name)
			defaults.synchronize()
		}
	}

	@Test("Every stored form round-trips through UserDefaults", arguments: StoredFormSample.all)
	func everyStoredFormRoundTrips(sample: StoredFormSample) {
		let suite = Suite()
		sample.write(to: suite.defaults)
		#expect(sample.mismatch(in: suite.defaults) == nil)
	}

	@Test func extremeIntegersReadBackExactly() {
		let suite = Suite()
		let store = suite.defaults
		let intMax = Defaults.Key<Int>("intMax", default: 0, suite: store)
		let uint64Max = Defaults.Key<UInt64>("uint64Max", default: 0, suite: store)
		store[intMax] = .max
		store[uint64Max] = .max
		#expect(store[intMax] == .max)
		#expect(store[uint64Max] == .max)
		#expect(store.storedValue(forKey: "intMax") as? Int == .max, "Foundation hands back Int64; the store, Int")
	}

	@Test func floatAndCGFloatAreStoredAsDoublesWithoutCrashing() {
		let suite = Suite()
		let store = suite.defaults
		let float = Defaults.Key<Float>("float", default: 0, suite: store)
		let cgFloat = Defaults.Key<CGFloat>("cgFloat", default: 0, suite: store)
		store[float] = 1.1
		store[cgFloat] = 2.25
		#expect(store[float] == 1.1)
		#expect(store[cgFloat] == 2.25)
		#expect(store.object(forKey: "cgFloat") is Double)
	}

	@Test(.scaledTimeLimit(minutes: 1))
	func nilRemovesTheKeyInsteadOfHanging() {
		let suite = Suite()
		let store = suite.defaults
		// Foundation registers defaults process-wide, across suites: a name no other test uses.
		let name = uniqueKeyName()
		let url = Defaults.Key<URL?>(name, suite: store)
		store[url] = URL(string: "https://example.com/a?b=c")
		#expect(store[url] == URL(string: "https://example.com/a?b=c"))
		store[url] = nil
		#expect(store.object(forKey: name) == nil)
	}

	@Test func aValueFoundationCannotStoreNeverReachesItsWriter() {
		FailureRecorder.start()
		let suite = Suite()
		let store = suite.defaults
		let name = uniqueKeyName()
		let key = Defaults.Key<Amount>(name, default: Amount(value: 0), suite: store)
		store[key] = Amount(value: 1.5)
		#expect(store.object(forKey: name) == nil)
		let failure = FailureRecorder.failures(forKey: name).first
		#expect(failure?.reason == .encodingFailed)
		#expect(failure?.message.contains("Decimal") == true)
	}

	@Test func registeredDefaultsAreVisibleToDirectReads() {
		let suite = Suite()
		let name = uniqueKeyName()
		_ = Defaults.Key<Int>(name, default: 42, suite: suite.defaults)
		#expect(suite.defaults.integer(forKey: name) == 42)
	}
}

/// A type whose (deliberately wrong) bridge hands back a `Decimal`, which Foundation cannot store.
private struct Amount: Equatable, Defaults.Serializable {
	var value: Decimal
	static let bridge = DecimalBridge()

	struct DecimalBridge: Defaults.Bridge {
		func serialize(_ value: Amount?) -> Decimal? { value?.value }
		func deserialize(_ object: Decimal?) -> Amount? { object.map(Amount.init) }
	}
}

/// What `UserDefaults` holds after the writing process has exited, read by a new process.
@Suite struct UserDefaultsReloadTests {
	@Test func everyStoredFormSurvivesAnExitWithNoFlushAndReadsBackInANewProcess() throws {
		let folder = try TemporaryDirectory()
		let suite = "reload-samples"
		let write = try ChildProcess.run(["userdefaults-write-samples", suite], environment: folder.configEnvironment)
		#expect(write.status == 0, "\(write)")
		#expect(FileManager.default.fileExists(atPath: folder.file("\(suite).plist").path), "written to disk at exit")

		let read = try ChildProcess.run(["userdefaults-read-samples", suite], environment: folder.configEnvironment)
		#expect(read.status == 0, "mismatches after a reload: \(read.lines)")
	}
}
