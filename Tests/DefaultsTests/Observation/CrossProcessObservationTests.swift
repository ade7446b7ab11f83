import Defaults
import Foundation
import Observation
import Testing

/// Changes made by another process (the `DefaultsTestHelper` executable) to a file store's file reach this
/// process's observers by themselves, through the store's file watching and the change hub.
@Suite("observation across processes", .scaledTimeLimit(minutes: 1))
struct CrossProcessObservationTests {
	@Test func observersHearAnotherProcessChangeTheFileAndOnlyTheChangedKeys() async throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("settings.plist")
		let store = Defaults.FileStore.at(url)
		// Sorted before `level`: were it reported, it would be reported first.
		let unchanged = Defaults.Key<String>("aUnchanged", default: "", suite: store)
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		Defaults[unchanged] = "same"
		Defaults[level] = 2
		#expect(store.flush())

		let levels = Recorder<Defaults.KeyChange<Int>>()
		let unchangedReports = Recorder<String>()
		let observations = [
			Defaults.observe(level, options: []) { levels.append($0) },
			Defaults.observe(unchanged, options: []) { unchangedReports.append($0.newValue) },
		]
		var updates = Defaults.updates(level, initial: false).makeAsyncIterator()

		// The limits are for a hang (a child's start takes seconds on a busy machine); a passing test goes on as soon as
		// the child has ended and the observer has heard it. How the change is heard (the file's watch, not a poll) is
		// FileStoreTests' and SystemLayerTests' to check, not timed here.
		// Waited for as a task (the asynchronous `wait`), not by blocking one of the test pool's threads (two on CI),
		// which other tests' tasks need meanwhile.
		let child = try await ChildProcess(["observation-write", url.path, "level=42", "aUnchanged=same"])
			.wait(timeout: TimeInterval(30 * sanitizerSlowdown))
		#expect(child.status == 0, "\(child)")
		#expect(await eventually(timeout: .seconds(30).scaledForSanitizer) { levels.count == 1 })
		#expect(levels.values == [.init(oldValue: 2, newValue: 42)])
		#expect(await updates.next() == 42)
		#expect(unchangedReports.values.isEmpty)
		// Nothing has to be read by hand: the observers had the value before this read.
		#expect(Defaults[level] == 42)
		observations.forEach { $0.invalidate() }
	}

	@Test func anObservableModelTracksAnotherProcessesChange() async throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("settings.plist")
		let store = Defaults.FileStore.at(url)
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let value = Defaults.ObservableValue(level)
		let fired = Recorder<Int>()
		_ = withObservationTracking {
			value.value
		} onChange: {
			fired.append(1)
		}
		let child = try await ChildProcess(["observation-write", url.path, "level=7"])
			.wait(timeout: TimeInterval(30 * sanitizerSlowdown))
		#expect(child.status == 0, "\(child)")
		#expect(await eventually(timeout: .seconds(30).scaledForSanitizer) { fired.count == 1 })
		#expect(value.value == 7)
	}

	@Test func anotherProcessHearsThisProcessChangeTheFile() async throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("settings.plist")
		let store = Defaults.FileStore.at(url)
		let greeting = Defaults.Key<String?>("greeting", suite: store)
		// The child keeps no clock: it waits for the value, or for `giveUp`, which the wait below creates when the
		// test's limit has passed (a fixed wait in the child failed under load, its clock running from its start).
		let giveUp = folder.file("give-up")
		let child = try ChildProcess(["observation-await", url.path, "greeting", "hello", giveUp.path])
		defer { child.stopIfRunning() }
		// One generous limit for the whole exchange, under the suite's time limit.
		let deadline = Date().addingTimeInterval(TimeInterval(45 * sanitizerSlowdown))
		let isReady = try await child.waitForOutput("ready", timeout: deadline.timeIntervalSinceNow)
		try #require(isReady, "the child did not start observing: \(child.standardErrorSoFar)")
		Defaults[greeting] = "hello"
		#expect(store.flush())
		let result = try await child.wait(timeout: max(deadline.timeIntervalSinceNow, 1), givingUpBy: giveUp)
		#expect(result.status == 0, "\(result)")
	}
}
