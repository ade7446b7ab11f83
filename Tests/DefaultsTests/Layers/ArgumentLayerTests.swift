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

	/// Observers hear what a read returns: for a key that skips its argument, the user's value beneath it, before and
	/// after, never the key's default.
	@Test func anObserverOfAKeyThatSkipsItsArgumentHearsTheValueBeneath() async throws {
		let name = uniqueKeyName("count")
		FailureRecorder.start()
		try store.write(5, forKey: name)
		store.setArguments([name: "many"])
		let count = Defaults.Key<Int>(name, default: 7, suite: store)
		#expect(Defaults[count] == 5)
		let heard = Recorder<String>()
		let observation = Defaults.observe(count, options: [.prior]) {
			heard.append("\($0.isPrior ? "prior " : "")\($0.oldValue) -> \($0.newValue)")
		}
		defer { observation.invalidate() }
		var updates = Defaults.updates(count, initial: false).makeAsyncIterator()
		Defaults[count] = 6
		#expect(Defaults[count] == 6)
		#expect(heard.values == ["prior 5 -> 6", "5 -> 6"])
		Defaults.reset(count)
		#expect(heard.values.suffix(2) == ["prior 6 -> 7", "6 -> 7"])
		// The argument goes: the key reads what it read (the default), and nothing is heard; it comes back, and then
		// a value beneath it that another process stored is heard through an outside change.
		store.setArguments([:])
		store.setArguments([name: "many"])
		store.memory.withLock { $0.values[name] = 9 }
		store.reportOutsideChanges([name])
		#expect(heard.values.last == "7 -> 9")
		#expect(await updates.next() == 6)
	}

	/// Observers hear only changes of what a key reads: a write beneath an argument the key reads, or a variable the
	/// key skips arriving above its value, is not heard; the next change that moves the value is.
	@Test func aChangeThatLeavesWhatAKeyReadsAsItWasIsNotHeard() throws {
		let themeName = uniqueKeyName("theme")
		let countName = uniqueKeyName("count")
		FailureRecorder.start()
		store.setArguments([themeName: "dark"])
		try store.write(5, forKey: countName)
		let theme = Defaults.Key<String>(themeName, default: "system", suite: store)
		let count = Defaults.Key<Int>(countName, default: 7, suite: store)
		let heard = Recorder<String>()
		let themeObservation = Defaults.observe(theme, options: [.prior]) {
			heard.append("\($0.isPrior ? "prior " : "")\($0.oldValue) -> \($0.newValue)")
		}
		let countObservation = Defaults.observe(count, options: []) { heard.append("\($0.oldValue) -> \($0.newValue)") }
		let both = Defaults.observe(keys: theme, count, options: []) { heard.append("either") }
		defer {
			themeObservation.invalidate()
			countObservation.invalidate()
			both.invalidate()
		}
		Defaults[theme] = "light"
		Defaults.reset(theme)
		try store.write("mine", forKey: themeName)
		store.setEnvironment((values: [countName: "lots"], variables: [countName: "APP_count"]))
		#expect(Defaults[theme] == "dark")
		#expect(Defaults[count] == 5)
		#expect(heard.values.isEmpty)
		// Changes that move what the keys read are heard, after nothing else.
		store.setArguments([:])
		store.reportOutsideChanges([themeName])
		Defaults[count] = 6
		#expect(heard.values == ["dark -> mine", "either", "5 -> 6", "either"])
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
