import Defaults
import Foundation
import Testing

private final class SettingsObject {
	@Default var level: Int

	init(_ key: Defaults.Key<Int>) {
		_level = Default(key)
	}
}

private struct SettingsValue {
	@Default var level: Int

	init(_ key: Defaults.Key<Int>) {
		_level = Default(key)
	}
}

extension Defaults.Keys {
	fileprivate static let wrapperLevel = Key<Int>("wrapperLevel", default: 3, suite: Defaults.InMemoryStore())
}

private final class StaticKeySettings {
	@Default(.wrapperLevel) var level: Int
}

@Suite("@Default", .scaledTimeLimit(minutes: 1))
struct DefaultPropertyWrapperTests {
	let store = Defaults.InMemoryStore()

	@Test func readsAndWritesTheStore() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = SettingsObject(level)
		#expect(settings.level == 1)
		settings.level = 4
		#expect(store[level] == 4)
		Defaults[level] = 5
		#expect(settings.level == 5)
	}

	@Test func propertiesWithTheSameKeyInDifferentObjectsAgree() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let object = SettingsObject(level)
		let value = SettingsValue(level)
		object.level = 7
		#expect(value.level == 7)
		// A `let` struct can write too: the value lives in the store, not in the struct.
		value.level = 8
		#expect(object.level == 8)
	}

	@Test func worksWithAStaticKeyByItsShortName() {
		let settings = StaticKeySettings()
		let other = StaticKeySettings()
		settings.level += 1
		#expect(other.level == 4)
		other.$level.reset()
		#expect(settings.level == 3)
	}

	@Test func projectedValueResetsAndTellsAboutTheDefault() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = SettingsObject(level)
		settings.level = 6
		#expect(!settings.$level.isDefaultValue)
		settings.$level.reset()
		#expect(settings.level == 1)
		#expect(settings.$level.isDefaultValue)
		#expect(settings.$level.defaultValue == 1)
		#expect(settings.$level.key === level)
	}

	@Test func writesAreObserved() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = SettingsObject(level)
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		settings.level = 2
		settings.$level.reset()
		#expect(changes.values == [.init(oldValue: 1, newValue: 2), .init(oldValue: 2, newValue: 1)])
		observation.invalidate()
	}

	@Test func projectedUpdatesFollowChangesFromAnywhere() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let settings = SettingsObject(level)
		let other = SettingsValue(level)
		var seen: [Int] = []
		for await value in settings.$level.updates {
			seen.append(value)
			if seen.count == 1 {
				other.level = 9
			} else {
				break
			}
		}
		#expect(seen == [1, 9])
	}
}
