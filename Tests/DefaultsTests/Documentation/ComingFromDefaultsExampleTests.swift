// Mirrors the DocC article "Coming from the well-known Defaults package"
// (Sources/Defaults/Documentation.docc/ComingFromDefaults.md): the same code, run. Keep the two in step. Differences:
// the declarations are `private`/`fileprivate` and the stored names have a `coming` prefix (the standard store is
// shared with other tests, and `theme` is called `comingTheme` here); the UserDefaults suite has a unique name and
// is removed afterwards.
import Defaults
import Foundation
import Testing

private enum Theme: String, Defaults.Serializable { case light, dark }

extension Defaults.Keys {
	fileprivate static let comingTheme = Key<Theme>("comingTheme", default: .light)
	fileprivate static let fontSize = Key<Double>("comingFontSize", default: 13)
	fileprivate static let extras = Key<[String: Defaults.AnySerializable]>("comingExtras", default: [:])
}

@Suite(.serialized) struct ComingFromDefaultsExampleTests {
	@Test func theWellKnownSpelling() {
		defer { Defaults.reset(.comingTheme, .fontSize, .extras) }
		Defaults[.comingTheme] = .dark
		Defaults[.fontSize] += 1
		#expect(Defaults[.fontSize] == 14)
		Defaults.reset(.comingTheme, .fontSize)
		#expect(Defaults[.comingTheme] == .light)

		var seen: [Theme] = []
		let observation = Defaults.observe(.comingTheme) { change in seen.append(change.newValue) }
		defer { observation.invalidate() }
		Defaults.withoutPropagation { Defaults[.comingTheme] = .dark }
		#expect(seen == [.light])  // the initial call only: the write was not propagated

		Defaults[.extras]["answer"] = 42
		#expect(Defaults[.extras]["answer"]?.get(Int.self) == 42)

		let name = "ComingFromDefaults-\(UUID().uuidString)"
		defer { UserDefaults.standard.removePersistentDomain(forName: name) }
		let legacy = Defaults.Key<Bool>("legacy", default: false, suite: UserDefaults(suiteName: name)!)
		#expect(Defaults[legacy] == false)
	}
}
