import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// Launch arguments (`-key value`) read above the stored values for one run, as Foundation's argument domain does,
/// and never reach the file, a snapshot or sync.
@Suite(.scaledTimeLimit(minutes: 1)) struct ArgumentLayerTests {
	let folder: TemporaryDirectory
	let url: URL
	let store: Defaults.FileStore

	init() throws {
		folder = try TemporaryDirectory()
		url = folder.file("settings.plist")
		store = Defaults.FileStore.at(url)
	}

	@Test func anArgumentOverridesAStoredValueForTheRun() throws {
		try store.write("light", forKey: "theme")
		#expect(store.flush())
		store.setArguments(Defaults.FileStore.argumentDomain(from: ["app", "-theme", "dark"]))
		let theme = Defaults.Key<String>("theme", default: "system", suite: store)
		#expect(Defaults[theme] == "dark")
		#expect(Defaults.Snapshot.storedForms(in: store) as NSDictionary == ["theme": "light"] as NSDictionary)
		#expect(store.ownValue(forKey: "theme") as? String == "light")
	}

	/// An update starts from the user's value, not from an argument that shadows it for this run: the argument must
	/// never reach the file, and the stored value must not be lost to it.
	@Test func anUpdateOfAKeyAnArgumentShadowsStartsFromTheStoredValue() throws {
		let name = uniqueKeyName("counter")
		try store.write(500, forKey: name)
		#expect(store.flush())
		store.setArguments(Defaults.FileStore.argumentDomain(from: ["app", "-\(name)", "99"]))
		let counter = Defaults.Key<Int>(name, default: 0, suite: store)
		#expect(Defaults[counter] == 99)
		try Defaults.update(counter) { $0 += 1 }
		#expect(store.ownValue(forKey: name) as? Int == 501)
		#expect(Defaults[counter] == 99)
		#expect(store.flush())
		#expect(try FileContents.values(of: url)[name] as? Int == 501)
		try store.updateStoredValues([name]) { $0[name] = ($0[name] as? Int ?? 0) + 1 }
		#expect(store.ownValue(forKey: name) as? Int == 502)
	}

	@Test func aNumberArgumentReadsAsANumberForNumberKeys() {
		let name = uniqueKeyName("counter")
		FailureRecorder.start()
		store.setArguments(
			Defaults.FileStore.argumentDomain(from: [
				"app", "-\(name)", "99", "-ratio", "1.5", "-whole", "2", "-flag", "YES", "-off", "false", "-word",
				"99",
			]))
		#expect(Defaults[Defaults.Key<Int>(name, default: 0, suite: store)] == 99)
		#expect(Defaults[Defaults.Key<Double>("ratio", default: 0, suite: store)] == 1.5)
		#expect(Defaults[Defaults.Key<Double>("whole", default: 0, suite: store)] == 2)
		#expect(Defaults[Defaults.Key<Bool>("flag", default: false, suite: store)])
		#expect(!Defaults[Defaults.Key<Bool>("off", default: true, suite: store)])
		#expect(Defaults[Defaults.Key<String>("word", default: "", suite: store)] == "99")
		#expect(Defaults[Defaults.Key<Int?>("word", suite: store)] == 99)
		#expect(FailureRecorder.failures(forKey: name).isEmpty)
		if case .current(let value) = Defaults.Key<Int>(name, default: 0, suite: store).storedState() {
			#expect(value == 99)
		} else {
			Issue.record("the argument 99 does not read as an integer")
		}
	}

	@Test func aPropertyListArgumentReadsAsACollection() {
		store.setArguments(Defaults.FileStore.argumentDomain(from: ["app", "-list", "(a, b)", "-map", "{ a = 1; }"]))
		#expect(Defaults[Defaults.Key<[String]>("list", default: [], suite: store)] == ["a", "b"])
		#expect(Defaults[Defaults.Key<[String: String]>("map", default: [:], suite: store)] == ["a": "1"])
	}

	@Test func textThatIsNoNumberIsStillReportedForANumberKey() {
		let name = uniqueKeyName("count")
		FailureRecorder.start()
		store.setArguments([name: "many"])
		#expect(Defaults[Defaults.Key<Int>(name, default: 7, suite: store)] == 7)
		#expect(FailureRecorder.failures(forKey: name).count == 1)
	}

	/// An argument that does not read as the key's value is reported once and skipped: the user's value reads.
	@Test func anArgumentThatDoesNotReadIsSkipped() throws {
		let name = uniqueKeyName("count")
		FailureRecorder.start()
		try store.write(5, forKey: name)
		store.setArguments([name: "many"])
		let count = Defaults.Key<Int>(name, default: 7, suite: store)
		#expect(Defaults[count] == 5)
		#expect(Defaults[count] == 5)
		#expect(FailureRecorder.failures(forKey: name).count == 1)
		// The layer it reads from is the one beneath the argument; a key the argument does read says so.
		#expect(Defaults.layer(of: count) == .stored)
		#expect(Defaults.layer(of: Defaults.Key<String>(name, default: "", suite: store)) == .launchArgument)
	}

	@Test func anEmptyEnvironmentPrefixIsRefused() {
		FailureRecorder.start()
		store.readEnvironment(prefix: "")
		#expect(FailureRecorder.failures(mentioning: "empty prefix").count >= 1)
		#expect(store.memory.withLock { $0.environment.isEmpty })
	}

	@Test func aURLOrAStringEnumArgumentReadsFromItsText() {
		store.setArguments(["home": "https://example.com/a", "letter": "beta"])
		#expect(Defaults[Defaults.Key<URL?>("home", suite: store)] == URL(string: "https://example.com/a"))
		#expect(Defaults[Defaults.Key<Letter>("letter", default: .alpha, suite: store)] == .beta)
	}

	@Test func aWriteOfAShadowedKeyReachesTheFileAndTheArgumentStillWins() throws {
		store.setArguments(["volume": "3"])
		let volume = Defaults.Key<Int>("volume", default: 0, suite: store)
		Defaults[volume] = 8
		#expect(Defaults[volume] == 3)
		#expect(store.flush())
		let data = try Data(contentsOf: url)
		let values = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
		#expect(values as NSDictionary == ["volume": 8] as NSDictionary)
		Defaults.reset(volume)
		#expect(Defaults[volume] == 3)
		#expect(store.storedKeys().isEmpty)
	}

	@Test func aNumberInAStoredStringIsNotReadAsANumber() throws {
		let name = uniqueKeyName("stored")
		FailureRecorder.start()
		try store.write("99", forKey: name)
		#expect(Defaults[Defaults.Key<Int>(name, default: 1, suite: store)] == 1)
		#expect(FailureRecorder.failures(forKey: name).count == 1)
	}
}
