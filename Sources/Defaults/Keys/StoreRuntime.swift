import Foundation
import Synchronization

/// Everything the package keeps about one store, in one object: the change counter keys read against, who hears a
/// write or an outside change (`StoreRuntime+Listeners.swift`), which keys are declared under which names
/// (`StoreRuntime+Declarations.swift`), and which keys' stored values failed to decode.
///
/// Keys look their store's runtime up once, when they are made, and hold it; so do the change hub's subscriptions
/// and the sync engine. A write or outside change is then a question to one object, not to a table per concern.
/// The runtime holds its store weakly and is found by the store's identity only while that store lives: a store
/// made later at a freed store's address gets a runtime of its own, with no failures, listeners or count it did not
/// earn.
@usableFromInline
package final class StoreRuntime: @unchecked Sendable {
	// Unchecked: `store` is a weak reference written once, in `init`; everything else is immutable, atomic or behind
	// a lock.
	private weak var store: (any Defaults.Store)?

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

	private init(_ store: any Defaults.Store) {
		self.store = store
		if let counting = store as? any CountsItsOwnChanges {
			changeCounter = counting.changeCounter
			writeCounter = nil
		} else {
			changeCounter = store.reportsEveryChange ? Defaults.ChangeCounter() : nil
			writeCounter = changeCounter
		}
	}

	/// Whether this is the runtime of `store`.
	func belongs(to store: any Defaults.Store) -> Bool {
		self.store === store
	}

	// MARK: Finding a store's runtime

	/// The runtimes of live stores. An entry whose store is gone is replaced when its address is used again and
	/// dropped when another store gets its runtime.
	private static let runtimes: LockedState<[ObjectIdentifier: StoreRuntime]> = {
		OutsideChangeRoute.connect { store, keys in
			StoreRuntime.existing(for: store)?.receiveOutsideChanges(keys, from: store)
		}
		return LockedState([:])
	}()

	/// The runtime of `store`, made on first use.
	package static func of(_ store: any Defaults.Store) -> StoreRuntime {
		let id = ObjectIdentifier(store)
		let (runtime, dropped) = runtimes.withLock { runtimes -> (StoreRuntime, [StoreRuntime]) in
			if let runtime = runtimes[id], runtime.belongs(to: store) {
				return (runtime, [])
			}
			var dropped: [StoreRuntime] = []
			for (key, runtime) in runtimes where runtime.store == nil {
				dropped.append(runtime)
				runtimes[key] = nil
			}
			let runtime = StoreRuntime(store)
			runtimes[id] = runtime
			return (runtime, dropped)
		}
		// Released here, outside the lock: a dropped runtime's listeners may have deinits that come back here.
		withExtendedLifetime(dropped) {}
		return runtime
	}

	/// The runtime of `store` if it has one: a store without one has no keys, observers or listeners to tell.
	static func existing(for store: any Defaults.Store) -> StoreRuntime? {
		runtimes.withLock { runtimes in
			runtimes[ObjectIdentifier(store)].flatMap { $0.belongs(to: store) ? $0 : nil }
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
	func forgetFailure(ofKey key: String) {
		guard failureCount.load(ordering: .relaxed) > 0 else {
			return
		}
		failedKeys.withLock { keys in
			keys.remove(key)
			failureCount.store(keys.count, ordering: .relaxed)
		}
	}
}
