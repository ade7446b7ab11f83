import Foundation
import Testing

@testable import Defaults

/// Which path `Defaults.update` takes for a key: the store's own atomic update, or the sync engine's compare-and-swap
/// loop for a synced key (issue 22). With a remote that cannot be reached, the two are told apart by what happens:
/// the local path stores the value, the synced one throws and stores nothing.
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncedUpdateRoutingTests {
	final class Synced: @unchecked Sendable {
		let store = Defaults.InMemoryStore()
		let remote = UnreachableRemote()
		let engine: Defaults.SyncEngine
		let key: Defaults.Key<Int>
		let heard = Recorder<Int>()
		var observation: (any Defaults.Observation)?

		init() {
			engine = Defaults.SyncEngine(remote: remote, prefix: "/routing/", store: store, stateFile: nil)
			key = Defaults.Key<Int>("count", default: 0, suite: store)
			store.setStoredValue(7, forKey: "count")
			engine.add(["count"])
			observation = Defaults.observe(key, options: []) { [heard] change in heard.append(change.newValue) }
		}

		func expectUnchanged() {
			#expect(store.storedValue(forKey: "count") as? Int == 7)
			#expect(heard.values.isEmpty, "no observer heard a change")
			#expect(remote.writes.load(ordering: .relaxed) == 0, "nothing was sent")
		}
	}

	/// The synchronous form, which an async function cannot call directly (it prefers the asynchronous overload).
	static func updateWithoutAwait(_ key: Defaults.Key<Int>) throws -> Int {
		try Defaults.update(key) { $0 += 1 }
	}

	@Test func theAsynchronousFormSendsASyncedKeyToItsEngineAndChangesNothingWhenTheRemoteIsUnreachable() async throws {
		let synced = Synced()
		await #expect {
			try await Defaults.update(synced.key) { $0 += 1 }
		} throws: { error in
			(error as? Defaults.SyncedUpdateError)?.reason == .unreachable
		}
		synced.expectUnchanged()
	}

	@Test func aTransactionOverSyncedKeysGoesToTheEngineToo() async throws {
		let synced = Synced()
		await #expect(throws: Defaults.SyncedUpdateError.self) {
			try await Defaults.update([synced.key]) { transaction in transaction[synced.key] += 1 }
		}
		synced.expectUnchanged()
	}

	/// On a thread of Swift's concurrency pool (a synchronous function called from async code) the synchronous form
	/// may not wait: the update would need that pool, which has as many threads as cores.
	@Test func theSynchronousFormRefusesASyncedKeyOnAThreadOfThePoolAndChangesNothing() async throws {
		let synced = Synced()
		#expect {
			try Self.updateWithoutAwait(synced.key)
		} throws: { error in
			guard let error = error as? Defaults.SyncedUpdateError, error.reason == .needsAwait else {
				return false
			}
			return error.keyNames == ["count"] && error.message.contains("try await Defaults.update")
		}
		synced.expectUnchanged()
	}

	/// On a thread that runs no task the synchronous form waits for the engine's update: here the remote cannot be
	/// reached, so it throws the engine's error, and nothing changed.
	@Test func theSynchronousFormOnAThreadWithNoTaskSendsASyncedKeyToItsEngine() async throws {
		let synced = Synced()
		let key = synced.key
		let outcome = await withCheckedContinuation { continuation in
			Thread.detachNewThread {
				continuation.resume(returning: Result { try Self.updateWithoutAwait(key) })
			}
		}
		#expect {
			try outcome.get()
		} throws: { error in
			(error as? Defaults.SyncedUpdateError)?.reason == .unreachable
		}
		synced.expectUnchanged()
	}

	@Test func aKeyNoLongerSyncedIsUpdatedInItsStoreByEitherForm() async throws {
		let synced = Synced()
		synced.engine.remove(["count"])
		#expect(try Self.updateWithoutAwait(synced.key) == 8)
		#expect(try await Defaults.update(synced.key) { $0 += 1 } == 9)
		#expect(synced.store.storedValue(forKey: "count") as? Int == 9)
	}

	@Test func aKeyOfAnotherStoreIsNotTakenForASyncedOne() async throws {
		let synced = Synced()
		let other = Defaults.InMemoryStore()
		let key = Defaults.Key<Int>("count", default: 0, suite: other)
		#expect(try await Defaults.update(key) { $0 += 1 } == 1)
		#expect(try Self.updateWithoutAwait(key) == 2)
		synced.expectUnchanged()
	}
}
