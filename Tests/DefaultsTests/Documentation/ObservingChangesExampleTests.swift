// Mirrors the DocC article "Observing changes" (Sources/Defaults/Documentation.docc/ObservingChanges.md): the same
// code, run. Keep the two in step. Differences: the keys are `fileprivate` with an `observing` prefix in their stored
// names (they live in the standard store and must meet no other test's keys); the `for await` loops make the change
// they wait for themselves, and the prints are collected so that they can be checked.
import Defaults
import Foundation
import Observation
import Synchronization
import Testing

extension Defaults.Keys {
	fileprivate static let isUnicornMode = Key<Bool>("observingIsUnicornMode", default: false)
	fileprivate static let level = Key<Int>("observingLevel", default: 1)
	fileprivate static let title = Key<String>("observingTitle", default: "")
}

private final class GameSettings {
	@Default(.level) var level: Int
}

@Observable
private final class SettingsModel {
	private let storedLevel = Defaults.ObservableValue(.level)

	var level: Int {
		get { storedLevel.value }
		set { storedLevel.value = newValue }
	}
}

@Suite(.serialized, .scaledTimeLimit(minutes: 1)) struct ObservingChangesExampleTests {
	init() {
		Defaults.reset(.isUnicornMode, .level, .title)
	}

	@Test func observe() {
		defer { Defaults.reset(.level) }
		var printed: [String] = []
		let observation = Defaults.observe(.level) { change in
			printed.append("\(change.oldValue) -> \(change.newValue)")
		}  // prints "1 -> 1" at once: the current value
		Defaults[.level] = 2  // prints "1 -> 2"
		observation.invalidate()  // or let it go: an observation ends when it is released
		Defaults[.level] = 3
		#expect(printed == ["1 -> 1", "1 -> 2"])
	}

	@Test func updates() async {
		defer { Defaults.reset(.isUnicornMode, .level, .title) }
		var printed: [String] = []
		for await isUnicornMode in Defaults.updates(.isUnicornMode) {
			printed.append("Unicorn mode: \(isUnicornMode)")
			if isUnicornMode { break }  // the observation ends with the loop
			Defaults[.isUnicornMode] = true  // (test only) the change the loop waits for
		}
		#expect(printed == ["Unicorn mode: false", "Unicorn mode: true"])

		printed = []
		for await (level, title) in Defaults.updates(.level, .title) {
			printed.append("\(level) \(title)")  // several keys: a tuple of their current values
			if title == "done" { break }
			Defaults[.title] = "done"  // (test only)
		}
		#expect(printed == ["1 ", "1 done"])
	}

	@Test func withoutPropagation() {
		defer { Defaults.reset(.level) }
		var heard = 0
		let observation = Defaults.observe(.level, options: []) { _ in heard += 1 }
		defer { observation.invalidate() }
		Defaults.withoutPropagation {
			Defaults[.level] = 11  // written, but no observer hears it
		}
		#expect(Defaults[.level] == 11)
		#expect(heard == 0)
	}

	@Test func defaultPropertyWrapper() {
		let settings = GameSettings()
		settings.level += 1  // reads and writes Defaults[.level]
		#expect(Defaults[.level] == 2)
		settings.$level.reset()  // back to the default
		#expect(settings.$level.isDefaultValue)  // true
	}

	@Test func observableValue() {
		defer { Defaults.reset(.level) }
		let model = SettingsModel()
		let changes = LockedState(0)
		withObservationTracking {
			_ = model.level
		} onChange: {
			changes.withLock { $0 += 1 }  // after model.level = 2, Defaults[.level] = 2, or another process's write
		}
		Defaults[.level] = 2
		#expect(changes.withLock { $0 } == 1)
		#expect(model.level == 2)
	}
}
