import Foundation
import Testing

@testable import Defaults

@Suite("updates", .scaledTimeLimit(minutes: 1))
struct UpdatesTests {
	let store = Defaults.InMemoryStore()

	@Test func yieldsTheCurrentValueFirstThenEachChange() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		Defaults[level] = 2
		var seen: [Int] = []
		for await value in Defaults.updates(level) {
			seen.append(value)
			if value == 2 {
				// The handler runs inside these writes, so both are buffered before the loop goes on.
				Defaults[level] = 3
				level.reset()
			}
			if seen.count == 3 {
				break
			}
		}
		#expect(seen == [2, 3, 1])
	}

	@Test func withoutInitialStartsWithTheFirstChange() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let updates = Defaults.updates(level, initial: false)
		var iterator = updates.makeAsyncIterator()
		Defaults[level] = 5
		#expect(await iterator.next() == 5)
	}

	@Test func changesFromAnotherTaskArriveInOrder() async {
		let level = Defaults.Key<Int>("level", default: 0, suite: store)
		var writer: Task<Void, Never>?
		var seen: [Int] = []
		for await value in Defaults.updates(level) {
			seen.append(value)
			if writer == nil {
				// Started only once the loop has subscribed (its first value is the initial one), so that every write
				// below is one the loop must hear.
				writer = Task {
					for value in 1...100 {
						Defaults[level] = value
					}
				}
			}
			if value == 100 {
				break
			}
		}
		await writer?.value
		#expect(seen.first == 0)
		#expect(seen.last == 100)
		#expect(seen == seen.sorted(), "\(seen)")
		#expect(seen.count == 101, "every write is heard, once: \(seen)")
	}

	@Test func severalKeysYieldTuplesOfTheirValues() async {
		let otherStore = Defaults.InMemoryStore()
		let width = Defaults.Key<Int>("width", default: 1, suite: store)
		let title = Defaults.Key<String>("title", default: "a", suite: otherStore)
		var seen: [String] = []
		for await (currentWidth, currentTitle) in Defaults.updates(width, title) {
			seen.append("\(currentWidth)\(currentTitle)")
			if seen.count == 1 {
				Defaults[width] = 2
				Defaults[title] = "b"
			}
			if seen.count == 3 {
				break
			}
		}
		#expect(seen == ["1a", "2a", "2b"])
	}

	@Test func threeKeysYieldTriples() async {
		let a = Defaults.Key<Int>("a", default: 1, suite: store)
		let b = Defaults.Key<Bool>("b", default: false, suite: store)
		let c = Defaults.Key<String?>("c", suite: store)
		var iterator = Defaults.updates(a, b, c).makeAsyncIterator()
		let first = await iterator.next()
		#expect(first?.0 == 1 && first?.1 == false && first?.2 == nil)
		Defaults[c] = "x"
		let second = await iterator.next()
		#expect(second?.0 == 1 && second?.1 == false && second?.2 == "x")
	}

	@Test func typeErasedKeysYieldAnEventPerChange() async {
		let width = Defaults.Key<Int>("width", default: 1, suite: store)
		let title = Defaults.Key<String>("title", default: "a", suite: store)
		var events = 0
		for await _ in Defaults.updates([width, title]) {
			events += 1
			if events == 1 {
				Defaults[width] = 2
				Defaults[title] = "b"
				Defaults.reset(width, title)
			}
			if events == 5 {
				break
			}
		}
		#expect(events == 5)
		#expect(ChangeHub.shared.subscriptionCount(forKey: "width", in: store) == 0)
	}

	@Test func breakingTheLoopEndsTheObservation() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		for await _ in Defaults.updates(level) {
			#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 1)
			break
		}
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func nothingIsObservedBeforeIterationStarts() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let updates = Defaults.updates(level)
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
		_ = updates
	}

	@Test func cancellingTheTaskEndsTheObservationAndReleasesIt() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let seen = Recorder<Int>()
		let consumer = Task {
			for await value in Defaults.updates(level) {
				seen.append(value)
			}
		}
		#expect(await eventually { seen.count == 1 })
		Defaults[level] = 2
		#expect(await eventually { seen.count == 2 })
		consumer.cancel()
		await consumer.value
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
		Defaults[level] = 3
		#expect(seen.values == [1, 2])
	}

	@Test func eachLoopHasItsOwnObservation() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let updates = Defaults.updates(level)
		var first = updates.makeAsyncIterator()
		var second = updates.makeAsyncIterator()
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 2)
		Defaults[level] = 2
		#expect(await first.next() == 1)
		#expect(await first.next() == 2)
		#expect(await second.next() == 1)
		#expect(await second.next() == 2)
	}

	@Test func theSequenceCanBeSentToAnotherTask() async {
		let level = Defaults.Key<Int>("level", default: 4, suite: store)
		let updates: Defaults.Updates<Int> = Defaults.updates(level)
		let first = await Task.detached {
			for await value in updates {
				return value
			}
			return 0
		}.value
		#expect(first == 4)
	}
}
