import Foundation
import Testing

@testable import Defaults

@Suite("observe", .scaledTimeLimit(minutes: 1))
struct ObserveTests {
	let store = Defaults.InMemoryStore()

	@Test func callsTheHandlerWithTheCurrentValueRightAwayByDefault() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		store[level] = 3
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level) { changes.append($0) }
		#expect(changes.values == [Defaults.KeyChange(oldValue: 3, newValue: 3)])
		observation.invalidate()
	}

	@Test func reportsTheOldAndTheNewValueOfEachWrite() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		Defaults[level] = 2
		Defaults[level] = 5
		store[level] = 5
		#expect(
			changes.values == [
				.init(oldValue: 1, newValue: 2), .init(oldValue: 2, newValue: 5), .init(oldValue: 5, newValue: 5),
			])
		observation.invalidate()
	}

	@Test func runsTheHandlerOnTheWritingThreadBeforeTheWriteReturns() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let events = Recorder<(thread: pthread_t, event: String)>()
		let observation = Defaults.observe(level, options: []) { change in
			events.append((pthread_self(), "handler \(change.newValue)"))
		}
		let thread = Thread {
			Defaults[level] = 7
			// The handler has run by now, on this thread.
			events.append((pthread_self(), "write returned"))
		}
		thread.start()
		#expect(await eventually { events.count == 2 })
		let values = events.values
		#expect(values.map(\.event) == ["handler 7", "write returned"])
		#expect(values.count == 2 && pthread_equal(values[0].thread, values[1].thread) != 0)
		observation.invalidate()
	}

	@Test func priorOptionCallsBeforeTheChangeToo() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let seen = Recorder<(isPrior: Bool, old: Int, new: Int, stored: Int)>()
		let observation = Defaults.observe(level, options: [.prior]) { change in
			seen.append((change.isPrior, change.oldValue, change.newValue, self.store[level]))
		}
		Defaults[level] = 4
		let values = seen.values
		#expect(values.count == 2)
		#expect(values.first.map { $0.isPrior && $0.old == 1 && $0.new == 4 && $0.stored == 1 } == true)
		#expect(values.last.map { !$0.isPrior && $0.old == 1 && $0.new == 4 && $0.stored == 4 } == true)
		observation.invalidate()
	}

	@Test func aResetIsAChangeToTheDefault() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let name = Defaults.Key<String?>("name", suite: store)
		let levels = Recorder<Defaults.KeyChange<Int>>()
		let names = Recorder<Defaults.KeyChange<String?>>()
		let observations = [
			Defaults.observe(level, options: []) { levels.append($0) },
			Defaults.observe(name, options: []) { names.append($0) },
		]
		Defaults[level] = 9
		level.reset()
		Defaults[level] = 8
		Defaults.reset(level)
		Defaults[name] = "a"
		Defaults[name] = nil
		Defaults[name] = "b"
		Defaults.removeAll(suite: store)
		#expect(
			levels.values == [
				.init(oldValue: 1, newValue: 9), .init(oldValue: 9, newValue: 1), .init(oldValue: 1, newValue: 8),
				.init(oldValue: 8, newValue: 1),
			])
		#expect(
			names.values == [
				.init(oldValue: nil, newValue: "a"), .init(oldValue: "a", newValue: nil),
				.init(oldValue: nil, newValue: "b"), .init(oldValue: "b", newValue: nil),
			])
		observations.forEach { $0.invalidate() }
	}

	@Test func writesThroughTheStoreSeamAreReported() throws {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		try store.write(6, forKey: "level")
		store.removeValue(forKey: "level")
		try store.write(2, forKey: "level")
		try store.write(nil, forKey: "level")
		Defaults.reset("level", suite: store)
		#expect(
			changes.values == [
				.init(oldValue: 1, newValue: 6), .init(oldValue: 6, newValue: 1), .init(oldValue: 1, newValue: 2),
				.init(oldValue: 2, newValue: 1), .init(oldValue: 1, newValue: 1),
			])
		observation.invalidate()
	}

	@Test func aValueThatDoesNotDecodeIsReportedAsTheDefault() throws {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		try store.write("not a number", forKey: "level")
		Defaults[level] = 3
		#expect(changes.values == [.init(oldValue: 1, newValue: 1), .init(oldValue: 1, newValue: 3)])
		observation.invalidate()
	}

	@Test func onlyTheObservedKeyOfTheObservedStoreIsReported() {
		let otherStore = Defaults.InMemoryStore()
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let otherLevel = Defaults.Key<Int>("level", default: 1, suite: otherStore)
		let volume = Defaults.Key<Int>("volume", default: 1, suite: store)
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		Defaults[otherLevel] = 5
		Defaults[volume] = 5
		#expect(changes.values.isEmpty)
		Defaults[level] = 5
		#expect(changes.count == 1)
		observation.invalidate()
	}

	@Test func observingSeveralKeysCallsOnceForEachChangeOfAny() {
		let otherStore = Defaults.InMemoryStore()
		let width = Defaults.Key<Int>("width", default: 1, suite: store)
		let title = Defaults.Key<String>("title", default: "", suite: otherStore)
		let calls = Recorder<Int>()
		let observation = Defaults.observe(keys: width, title) { calls.append(Defaults[width]) }
		#expect(calls.values == [1])
		Defaults[width] = 2
		Defaults[title] = "t"
		Defaults.reset(width)
		#expect(calls.values == [1, 2, 2, 1])
		observation.invalidate()
		Defaults[width] = 3
		#expect(calls.count == 4)
	}

	@Test func everyOneOfAThousandObserversHearsAChange() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<Int>()
		let observations = (0..<1000).map { _ in
			Defaults.observe(level, options: []) { calls.append($0.newValue) }
		}
		Defaults[level] = 2
		#expect(calls.count == 1000)
		#expect(calls.values.allSatisfy { $0 == 2 })
		observations.forEach { $0.invalidate() }
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func observersOfOneOptionalKeyAllGetItsDecodedValues() async {
		let name = Defaults.Key<String?>("name", suite: store)
		let changes = Recorder<Defaults.KeyChange<String?>>()
		let observations = (0..<3).map { _ in Defaults.observe(name, options: []) { changes.append($0) } }
		var updates = Defaults.updates(name, initial: false).makeAsyncIterator()
		Defaults[name] = "a"
		#expect(changes.values == Array(repeating: .init(oldValue: nil, newValue: "a"), count: 3))
		#expect(await updates.next() == "a")
		observations.forEach { $0.invalidate() }
	}

	@Test func anInvalidatedObservationIsNotCalledAndIsReleased() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<Int>()
		weak var weakProbe: Probe?
		let observation: any Defaults.Observation
		do {
			let probe = Probe()
			weakProbe = probe
			observation = Defaults.observe(level, options: []) { change in
				withExtendedLifetime(probe) { calls.append(change.newValue) }
			}
		}
		Defaults[level] = 2
		observation.invalidate()
		observation.invalidate()
		Defaults[level] = 3
		#expect(calls.values == [2])
		#expect(weakProbe == nil)
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func aReleasedObservationEnds() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<Int>()
		do {
			let observation = Defaults.observe(level, options: []) { calls.append($0.newValue) }
			Defaults[level] = 2
			_ = observation
		}
		Defaults[level] = 3
		#expect(calls.values == [2])
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func anObservationTiedToAnObjectLastsAsLongAsTheObject() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<Int>()
		var owner: Probe? = Probe()
		Defaults.observe(level, options: []) { calls.append($0.newValue) }.tieToLifetime(of: owner!)
		Defaults[level] = 2
		#expect(calls.values == [2])
		owner = nil
		Defaults[level] = 3
		#expect(calls.values == [2])
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func removingTheLifetimeTieHandsTheObservationBack() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<Int>()
		let owner = Probe()
		do {
			let observation = Defaults.observe(level, options: []) { calls.append($0.newValue) }
			observation.tieToLifetime(of: owner).removeLifetimeTie()
		}
		Defaults[level] = 2
		#expect(calls.values.isEmpty)
		withExtendedLifetime(owner) {}
	}

	@Test func aHandlerMayInvalidateItsOwnObservation() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<Int>()
		let holder = Recorder<any Defaults.Observation>()
		holder.append(
			Defaults.observe(level, options: []) { change in
				calls.append(change.newValue)
				holder.values.first?.invalidate()
			})
		Defaults[level] = 2
		Defaults[level] = 3
		#expect(calls.values == [2])
	}
}
