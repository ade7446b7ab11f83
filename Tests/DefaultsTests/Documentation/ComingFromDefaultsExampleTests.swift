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

@Suite(.serialized, .scaledTimeLimit(minutes: 1)) struct ComingFromDefaultsExampleTests {
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

	@Test func theSmallerPiecesOfTheWellKnownAPI() throws {
		let name = "ComingFromDefaults-\(UUID().uuidString)"
		let suite = try #require(UserDefaults(suiteName: name))
		defer { UserDefaults.standard.removePersistentDomain(forName: name) }
		// Not `@Sendable`: it mutates state it alone captures, which only a plain closure may do.
		var calls = 0
		let camera = Defaults.Key<String>("comingCamera", suite: suite) {
			calls += 1
			return "camera \(calls)"
		}
		#expect(Defaults[camera] == "camera 1")
		#expect(camera.defaultValue == "camera 2")

		let watched: Set<Defaults.Keys> = [.comingTheme, .fontSize, .comingTheme]
		#expect(watched.count == 2)
		#expect(Defaults.Keys.comingTheme == Defaults.Key<Theme>("comingTheme", default: .light))
		#expect(Defaults.Keys.comingTheme != Defaults.Key<Theme>("comingTheme", default: .light, suite: suite))

		var extra = Defaults.AnySerializable(0)
		extra.set(0.5, type: Float.self)
		#expect(extra.get(Float.self) == 0.5)
		#expect(extra.propertyListValue as? Double == 0.5)

		let volume = Defaults.Key<Int>("comingVolume", default: 1, suite: suite)
		suite[volume] = 5
		var heard: [Int] = []
		let observation = Defaults.observe(volume, options: []) { heard.append($0.newValue) }
		defer { observation.invalidate() }
		suite.removeAll()
		#expect(suite[volume] == 1)
		#expect(heard == [1])
	}

	@Test func aDynamicDefaultIsNeverRunOnTwoThreadsAtOnce() async {
		final class Counter: @unchecked Sendable {
			var running = 0
			var overlaps = 0
		}
		let counter = Counter()
		let key = Defaults.Key<Int>("comingOverlap", suite: Defaults.InMemoryStore()) {
			counter.running += 1
			if counter.running > 1 { counter.overlaps += 1 }
			usleep(200)
			counter.running -= 1
			return 0
		}
		await withTaskGroup(of: Void.self) { group in
			for _ in 0..<4 {
				group.addTask {
					for _ in 0..<100 { _ = key.defaultValue }
				}
			}
		}
		#expect(counter.overlaps == 0)
	}
}
