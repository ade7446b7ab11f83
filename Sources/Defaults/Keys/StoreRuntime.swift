import Foundation
import Synchronization

/// Everything the package keeps about one store, in one object: the change counter keys read against, who hears a
/// write or an outside change (`StoreRuntime+Listeners.swift`), which keys are declared under which names
/// (`StoreRuntime+Declarations.swift`), and which keys' stored values failed to decode.
///
/// Keys look their store's runtime up once, when they are made, and hold it; so do the change hub's subscriptions
/// and the sync engine. A write or outside change is then a question to one object, not to a table per concern.
/// The store holds its runtime (in its `StoreAttachments`, Storage's), and the runtime does not hold the store: the
/// runtime goes with its store, and a store made later at a freed store's address gets a runtime of its own, with no
/// failures, listeners or count it did not earn.
@usableFromInline
package final class StoreRuntime: OutsideChangeReceiver, @unchecked Sendable {
	// Unchecked: everything is immutable, atomic or behind a lock (`LockedState` holds non-`Sendable` values).

	/// Advanced after every change reads can see, or `nil` when the store does not report every change
	/// (`UserDefaults`): its keys then look every read up.
	@usableFromInline let changeCounter: Defaults.ChangeCounter?
	/// The counter the package advances after a write or registration: `changeCounter`, unless the store already
	/// advances it in its own primitives (the stores the package ships), where a second atomic add per write would
	/// buy nothing.
	let writeCounter: Defaults.ChangeCounter?

	/// The keys whose stored value failed to decode and was reported, until they are written again.
	private let failedKeys = LockedState<Set<String>>([])
	/// The first declaration of each key name, and the pairs of types already reported as conflicting
	/// (`StoreRuntime+Declarations.swift`).
	let declarations = LockedState<(byName: [String: KeyDeclaration], reported: Set<String>)>(([:], []))
	/// `failedKeys.count`, so that a write skips the lock while nothing has failed, which is nearly always.
	private let failureCount = Atomic<Int>(0)

	// The listeners: see StoreRuntime+Listeners.swift.
	let slots = LockedState<[String: ListenerSlot]>([:])
	/// How many (key, listener) registrations exist; zero lets a write skip the listeners entirely.
	let registrationCount = Atomic<Int>(0)
	let outsideListeners = LockedState<(nextID: UInt64, handlers: [UInt64: @Sendable (Set<String>) -> Void])>(
		(0, [:]))
	/// One outside delivery at a time; recursive, since a handler may flush, which may report again on this thread.
	let outsideDeliveries = NSRecursiveLock()
	/// Who updates some of the store's names against a remote (`StoreRuntime+RemoteUpdaters.swift`).
	let remoteUpdaterRegistrations = LockedState<[WeakRemoteUpdater]>([])
	/// One migration run of the store at a time, so that two callers never interleave the operations of one step;
	/// runs of different stores do not wait for each other.
	let migrationRuns = LockedState(())
	/// The thread running a migration of the store (`pthread_self()`), else 0: its writes and removals go beneath
	/// the administrator's locks, since a migration moves the user's values and must not fail, or record its
	/// version without its change, for a key that happens to be locked.
	let migratingThread = Atomic<UInt>(0)
	/// How many running scopes stand another store in for this one (`StandInScope.swift`); the change counter carries
	/// `ChangeCounter.standInFlag` while there is one. Changed under the lock, so that a scope ending never clears
	/// the flag another has just set.
	private let standIns = LockedState(0)

	private init(_ store: any Defaults.Store) {
		if let counting = store as? any CountsItsOwnChanges {
			changeCounter = counting.changeCounter
			writeCounter = nil
		} else {
			changeCounter = store.reportsEveryChange ? Defaults.ChangeCounter() : nil
			writeCounter = changeCounter
		}
	}

	// MARK: Finding a store's runtime

	/// The runtime of `store`, made on first use and kept with the store's attachments: in the store itself for the
	/// stores the package makes, in Storage's weak table for the others.
	package static func of(_ store: any Defaults.Store) -> StoreRuntime {
		store.attachments.runtime { StoreRuntime(store) }
	}

	/// Whether the calling thread is running a migration of the store.
	var isMigratingOnThisThread: Bool {
		let thread = migratingThread.load(ordering: .relaxed)
		return thread != 0 && thread == Self.currentThread
	}

	static var currentThread: UInt {
		ThreadIdentity.current
	}

	// MARK: Scopes that stand another store in for this one

	/// Counts a scope that stands another store in for this one, and flags the change counter at the first.
	func beginStandIn() {
		standIns.withLock { count in
			count += 1
			if count == 1 {
				changeCounter?.setStoodIn(true)
			}
		}
	}

	/// Counts a scope gone, and clears the change counter's flag at the last.
	func endStandIn() {
		standIns.withLock { count in
			count -= 1
			if count == 0 {
				changeCounter?.setStoodIn(false)
			}
		}
	}

	// MARK: Changes the package sees besides writes

	/// Registers `values` as the store's defaults and counts the change.
	func register(_ values: [String: Any], in store: any Defaults.Store) {
		store.registerDefaultValues(values)
		writeCounter?.advance()
	}

	// MARK: Why a read did not decode again

	/// Reports `error` unless it was reported for its key since the key was last written: a value that does not
	/// decode is reported once, not at every read, until a write stores something new.
	func reportFailure(_ error: Defaults.DecodingError) {
		let isNew = failedKeys.withLock { keys in
			defer { failureCount.store(keys.count, ordering: .relaxed) }
			return keys.insert(error.keyName).inserted
		}
		guard isNew else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: error.keyName, reason: .decodingFailed, message: error.description, decodingError: error))
	}

	/// Forgets that `key` failed: whatever is stored now is new, and if it does not decode either, that is worth a
	/// report of its own.
	@inline(__always)
	func forgetFailure(ofKey key: String) {
		guard failureCount.load(ordering: .relaxed) > 0 else {
			return
		}
		forgetReportedFailure(ofKey: key)
	}

	@inline(never)
	private func forgetReportedFailure(ofKey key: String) {
		failedKeys.withLock { keys in
			keys.remove(key)
			failureCount.store(keys.count, ordering: .relaxed)
		}
	}
}
