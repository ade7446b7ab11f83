import Foundation
import Observation
import Testing

@testable import Defaults

@Observable
private final class Settings {
	private let storedLevel: Defaults.ObservableValue<Int>
	var title = ""

	init(_ key: Defaults.Key<Int>) {
		storedLevel = Defaults.ObservableValue(key)
	}

	var level: Int {
		get { storedLevel.value }
		set { storedLevel.value = newValue }
	}
}

@Suite("Observation framework")
struct ObservableValueTests {
	let store = Defaults.InMemoryStore()

	/// Tracks `settings.level` once and records whether `onChange` fired.
	private func track(_ settings: Settings) -> Recorder<Int> {
		let fired = Recorder<Int>()
		_ = withObservationTracking {
			settings.level
		} onChange: {
			fired.append(1)
		}
		return fired
	}

	@Test func trackingFiresWhenTheModelSetsTheKey() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = Settings(level)
		let fired = track(settings)
		settings.level = 2
		#expect(fired.count == 1)
		#expect(settings.level == 2)
	}

	@Test func trackingFiresWhenOtherCodeWritesTheKey() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = Settings(level)
		let fired = track(settings)
		Defaults[level] = 5
		#expect(fired.count == 1)
		let firedOnReset = track(settings)
		level.reset()
		#expect(firedOnReset.count == 1)
		#expect(settings.level == 1)
	}

	@Test func trackingFiresWhenAnotherModelWritesTheKey() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = Settings(level)
		let other = Settings(level)
		let fired = track(settings)
		other.level = 3
		#expect(fired.count == 1)
		#expect(settings.level == 3)
	}

	@Test func trackingFiresWhenTheStoreReportsAnOutsideChange() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = Settings(level)
		let fired = track(settings)
		store.setStoredValue(8, forKey: "level")
		store.reportOutsideChanges(["level"])
		#expect(fired.count == 1)
		#expect(settings.level == 8)
	}

	@Test func untrackedPropertiesAndOtherKeysDoNotFire() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let volume = Defaults.Key<Int>("volume", default: 1, suite: store)
		let settings = Settings(level)
		let fired = track(settings)
		Defaults[volume] = 2
		settings.title = "x"
		#expect(fired.count == 0)
	}

	@Test func aReleasedModelStopsObserving() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		do {
			let settings = Settings(level)
			#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 1)
			_ = settings
		}
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}
}
