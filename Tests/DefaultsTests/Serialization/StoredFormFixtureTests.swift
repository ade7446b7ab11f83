import Defaults
import DefaultsTestSupport
import Foundation
import Testing

extension StoredFormSample: CustomTestStringConvertible {
	public var testDescription: String { "\(family).\(name)" }
}

/// Every built-in stored form is pinned by `Fixtures/StoredForms/<family>.plist`, both ways.
@Suite struct StoredFormFixtureTests {
	@Test("Writing a value stores exactly its fixture's form", arguments: StoredFormSample.all)
	func writingMatchesFixture(sample: StoredFormSample) throws {
		let store = Defaults.InMemoryStore()
		sample.write(to: store)
		let stored = store.storedValue(forKey: sample.name)
		let path = "StoredForms/\(sample.family).plist"
		let fixture = try? Fixtures.dictionary(path)[sample.name]

		if sample.removesKey {
			#expect(stored == nil)
			#expect(fixture == nil, "a removed key has no fixture entry")
			return
		}
		let written = try #require(stored)
		guard let fixture else {
			if Fixtures.isRecording {
				try Fixtures.record(written, entry: sample.name, in: path)
				return
			}
			Issue.record("no fixture entry \(sample.name) in \(path); run with DEFAULTS_RECORD_FIXTURES=1 to add it")
			return
		}
		#expect(Fixtures.isSame(written, fixture), "stored form changed: wrote \(written), fixture has \(fixture)")
	}

	@Test("Reading a fixture's form gives back the value", arguments: StoredFormSample.all)
	func readingFixtureGivesValue(sample: StoredFormSample) throws {
		let fixtures = try Fixtures.dictionary("StoredForms/\(sample.family).plist")
		let store = try Defaults.InMemoryStore(values: fixtures)
		#expect(sample.mismatch(in: store) == nil)
	}

	@Test("Every fixture entry belongs to a sample, so no stored form goes unchecked")
	func noOrphanFixtureEntries() throws {
		let families = Set(StoredFormSample.all.map(\.family))
		for family in families {
			let names = Set(StoredFormSample.all.filter { $0.family == family }.map(\.name))
			let entries = Set(try Fixtures.dictionary("StoredForms/\(family).plist").keys)
			#expect(entries.subtracting(names).isEmpty, "\(family): entries without a sample")
		}
	}

	/// Programs that write every sample into one store (the `UserDefaults` reload test) name keys by the sample alone: a
	/// name two families share makes one sample overwrite the other.
	@Test func everySampleHasANameOfItsOwn() {
		var seen: [String: String] = [:]
		for sample in StoredFormSample.all {
			if let family = seen.updateValue(sample.family, forKey: sample.name) {
				Issue.record("'\(sample.name)' is a sample of both \(family) and \(sample.family)")
			}
		}
	}
}
