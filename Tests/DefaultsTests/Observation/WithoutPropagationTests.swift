import Defaults
import Foundation
import Testing

@Suite("withoutPropagation", .scaledTimeLimit(minutes: 1))
struct WithoutPropagationTests {
	let store = Defaults.InMemoryStore()

	@Test func changesInsideAreWrittenButNotReported() {
		let key1 = Defaults.Key<Int>("key1", default: 1, suite: store)
		let key2 = Defaults.Key<Int>("key2", default: 1, suite: store)
		let changes = Recorder<String>()
		let observation = Defaults.observe(keys: key1, key2, options: []) {
			changes.append("\(Defaults[key1]) \(Defaults[key2])")
		}
		Defaults.withoutPropagation {
			Defaults[key1] = 11
		}
		#expect(Defaults[key1] == 11)
		#expect(changes.values.isEmpty)
		Defaults[key2] = 12
		#expect(changes.values == ["11 12"])
		observation.invalidate()
	}

	@Test func aLaterChangeReportsTheHiddenValueAsItsOldValue() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		Defaults.withoutPropagation {
			Defaults[level] = 5
			level.reset()
			Defaults[level] = 6
		}
		Defaults[level] = 7
		#expect(changes.values == [.init(oldValue: 6, newValue: 7)])
		observation.invalidate()
	}

	@Test func nestedCallsHideTheirChangesAndReturnTheirResults() throws {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Int>()
		let observation = Defaults.observe(level, options: []) { changes.append($0.newValue) }
		let result = Defaults.withoutPropagation {
			Defaults[level] = 2
			let inner = Defaults.withoutPropagation {
				Defaults[level] = 3
				return "inner"
			}
			Defaults[level] = 4
			return inner
		}
		#expect(throws: CancellationError.self) {
			try Defaults.withoutPropagation {
				Defaults[level] = 5
				throw CancellationError()
			}
		}
		#expect(result == "inner")
		#expect(changes.values.isEmpty)
		Defaults[level] = 6
		#expect(changes.values == [6])
		observation.invalidate()
	}

	@Test func writesOnOtherThreadsMeanwhileAreReported() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Int>()
		let observation = Defaults.observe(level, options: []) { changes.append($0.newValue) }
		let otherThreadWrote = DispatchSemaphore(value: 0)
		Defaults.withoutPropagation {
			Defaults[level] = 2
			Thread {
				Defaults[level] = 3
				otherThreadWrote.signal()
			}.start()
			otherThreadWrote.wait()
			Defaults[level] = 4
		}
		#expect(changes.values == [3])
		observation.invalidate()
	}

	@Test func otherTasksMeanwhileAreReported() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Int>()
		let observation = Defaults.observe(level, options: []) { changes.append($0.newValue) }
		await Defaults.withoutPropagation {
			Defaults[level] = 2
			await Task.detached {
				Defaults[level] = 3
			}.value
			await Task.yield()
			Defaults[level] = 4
		}
		#expect(changes.values == [3])
		observation.invalidate()
	}

	@Test func updatesSequencesDoNotHearHiddenChanges() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		var iterator = Defaults.updates(level, initial: false).makeAsyncIterator()
		Defaults.withoutPropagation {
			Defaults[level] = 2
		}
		Defaults[level] = 3
		#expect(await iterator.next() == 3)
	}
}
