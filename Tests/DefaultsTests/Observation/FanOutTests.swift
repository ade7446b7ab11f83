import Foundation
import Testing

@testable import Defaults

/// Delivery to many observers reads an immutable list of the key's subscribers and calls each handler with no lock
/// held: these tests pin what that must keep from the locked delivery it replaced.
@Suite("observer fan-out", .scaledTimeLimit(minutes: 1))
struct FanOutTests {
	let store = Defaults.InMemoryStore()

	@Test func anObserverInvalidatedDuringADeliveryIsNotCalledForIt() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<String>()
		let second = Holder()
		let first = Defaults.observe(level, options: []) { change in
			calls.append("first \(change.newValue)")
			second.observation?.invalidate()
		}
		second.observation = Defaults.observe(level, options: []) { calls.append("second \($0.newValue)") }
		Defaults[level] = 2
		Defaults[level] = 3
		#expect(calls.values == ["first 2", "first 3"])
		first.invalidate()
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func anObserverThatInvalidatesItselfHearsNothingMoreAndTheOthersGoOn() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<String>()
		let own = Holder()
		own.observation = Defaults.observe(level, options: []) { change in
			calls.append("once \(change.newValue)")
			own.observation?.invalidate()
		}
		let other = Defaults.observe(level, options: []) { calls.append("other \($0.newValue)") }
		Defaults[level] = 2
		Defaults[level] = 3
		#expect(calls.values == ["once 2", "other 2", "other 3"])
		other.invalidate()
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func anObserverAddedDuringADeliveryHearsTheNextChange() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let calls = Recorder<String>()
		let added = Holder()
		let first = Defaults.observe(level, options: []) { change in
			calls.append("first \(change.newValue)")
			guard added.observation == nil else {
				return
			}
			added.observation = Defaults.observe(level, options: []) { calls.append("added \($0.newValue)") }
		}
		Defaults[level] = 2
		Defaults[level] = 3
		#expect(calls.values == ["first 2", "first 3", "added 3"])
		first.invalidate()
		added.observation?.invalidate()
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func interleavedObserversOfTwoKeysOfOneNameEachDecodeWithTheirOwnKey() {
		// One name, two key objects of different types: when their observers alternate, the change's shared decoding
		// is asked for one, then the other, and must answer each with its own key's result.
		let plain = Defaults.Key<Int>("level", default: 1, suite: store)
		let optional = Defaults.Key<Int?>("level", suite: store)
		let heard = Recorder<String>()
		var observations: [any Defaults.Observation] = []
		for index in 0..<6 {
			if index.isMultiple(of: 2) {
				observations.append(Defaults.observe(plain, options: []) { heard.append("plain \($0.newValue)") })
			} else {
				observations.append(
					Defaults.observe(optional, options: []) {
						heard.append("optional \(String(describing: $0.newValue))")
					})
			}
		}
		Defaults[plain] = 5
		Defaults[optional] = nil
		#expect(
			heard.values == Array(repeating: ["plain 5", "optional Optional(5)"], count: 3).flatMap { $0 }
				+ Array(repeating: ["plain 1", "optional Optional(1)"], count: 3).flatMap { $0 })
		observations.forEach { $0.invalidate() }
	}

	@Test func onlyObserversThatAskForPriorChangesHearThem() {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let heard = Recorder<String>()
		let plain = Defaults.observe(level, options: []) { heard.append("plain \($0.isPrior) \($0.newValue)") }
		let prior = Defaults.observe(level, options: [.prior]) { heard.append("prior \($0.isPrior) \($0.newValue)") }
		Defaults[level] = 2
		#expect(heard.values == ["prior true 2", "plain false 2", "prior false 2"])
		plain.invalidate()
		prior.invalidate()
	}

	@Test func observersComingAndGoingOnManyThreadsWhileWritesGoOnMissNothingInOrder() async {
		let level = Defaults.Key<Int>("level", default: 0, suite: store)
		let steady = Recorder<Int>()
		let steadyObservation = Defaults.observe(level, options: []) { steady.append($0.newValue) }
		// Each churning observer must hear strictly increasing values: never a change twice, never out of order.
		let disorder = Recorder<String>()
		let churnersDone = Recorder<Int>()
		let written = Recorder<Int>()
		// The writer goes on until every churner is done, so that their subscriptions overlap its writes.
		let writer = Thread {
			var value = 0
			while value < 2_000 || churnersDone.count < 3 {
				value += 1
				Defaults[level] = value
			}
			written.append(value)
		}
		let churners = (1...3).map { thread in
			Thread {
				for round in 0..<300 {
					let last = Recorder<Int>()
					let observation = Defaults.observe(level, options: []) { change in
						if let previous = last.values.last, previous >= change.newValue {
							disorder.append("thread \(thread) round \(round): \(previous) then \(change.newValue)")
						}
						last.append(change.newValue)
					}
					observation.invalidate()
				}
				churnersDone.append(thread)
			}
		}
		writer.start()
		churners.forEach { $0.start() }
		#expect(await eventually { written.count == 1 })
		#expect(steady.values == Array(1...(written.values.first ?? 0)))
		#expect(disorder.values.isEmpty)
		steadyObservation.invalidate()
		#expect(ChangeHub.shared.subscriptionCount(forKey: "level", in: store) == 0)
	}

	@Test func aHandlerCancelledOnAnotherThreadIsReleasedOnceNoDeliveryHoldsIt() async {
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		weak var weakProbe: Probe?
		let holder = Holder()
		do {
			let probe = Probe()
			weakProbe = probe
			holder.observation = Defaults.observe(level, options: []) { _ in withExtendedLifetime(probe) {} }
		}
		Defaults[level] = 2
		let ended = Recorder<Int>()
		let thread = Thread {
			holder.observation?.invalidate()
			ended.append(1)
		}
		thread.start()
		#expect(await eventually { ended.count == 1 })
		// The observation object is still referenced; the hub's list alone held the handler.
		#expect(holder.observation != nil)
		#expect(weakProbe == nil)
	}
}

/// An observation that handlers of the same test can reach.
private final class Holder: @unchecked Sendable {
	var observation: (any Defaults.Observation)?
}
