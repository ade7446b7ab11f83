import Foundation
import Synchronization

/// One change of one key in one store, in stored (property-list) form: each subscriber decodes it with its own key's
/// type, so nothing is decoded unless someone listens.
struct StoredChange {
	/// The store the key lives in.
	let store: any Defaults.Store
	/// The key's name.
	let name: String
	/// The stored form before the change; `nil` when nothing was stored.
	let oldValue: Any?
	/// The stored form after the change (for a prior notification: the one about to be written); `nil` when nothing
	/// is stored.
	let newValue: Any?
	/// Whether this is the notification sent before the change is made.
	let isPrior: Bool
	/// Values decoded for this change, per key object: observers of one key share one decoding.
	private let decodings = Decodings()

	init(store: any Defaults.Store, name: String, oldValue: Any?, newValue: Any?, isPrior: Bool) {
		self.store = store
		self.name = name
		self.oldValue = oldValue
		self.newValue = newValue
		self.isPrior = isPrior
	}

	/// `decode()`, or what it returned for an earlier observer with the same `key` object.
	///
	/// A change is delivered on one thread, one observer after the other, so the memo needs no lock.
	func decoded<Result>(for key: Defaults.Keys, _ decode: () -> Result) -> Result {
		let id = Decodings.ID(key: ObjectIdentifier(key), result: ObjectIdentifier(Result.self))
		// Unwrapped before the cast: a missing entry cast to an optional `Result` would succeed as `nil`.
		if let cached = decodings.results[id], let result = cached as? Result {
			return result
		}
		let result = decode()
		decodings.results[id] = result
		return result
	}

	private final class Decodings {
		struct ID: Hashable {
			let key: ObjectIdentifier
			let result: ObjectIdentifier
		}

		var results: [ID: Any] = [:]
	}
}

/// A key in a store, as the hub files its subscribers.
struct ObservedKey: Hashable {
	let store: ObjectIdentifier
	let name: String

	init(store: any Defaults.Store, name: String) {
		self.store = ObjectIdentifier(store)
		self.name = name
	}
}

/// A handler registered with the hub for one or more keys. Cancelling it removes it from the hub and releases the
/// handler and everything it captured, also while the subscription object itself is still referenced.
///
/// The handler is not `Sendable`: like KVO's, it runs on whichever thread made the change. It is only reached under
/// the lock, and called only while the subscription is active, which is what the unchecked conformance relies on.
final class ChangeSubscription: @unchecked Sendable {
	let keys: [ObservedKey]
	let wantsPrior: Bool

	private struct State {
		/// `nil` once cancelled. A class rather than a bare closure: handing a closure out of the generic
		/// `withLock` re-wraps it in a thunk, an allocation per observer per change.
		var handler: Handler?
		/// A lifetime tie: `owner` is kept alive until `object` is gone (see `Defaults.Observation.tieToLifetime`).
		var tie: (owner: AnyObject, object: Weak)?
	}

	struct Weak {
		weak var object: AnyObject?
	}

	private final class Handler {
		let call: (StoredChange) -> Void

		init(_ call: @escaping (StoredChange) -> Void) {
			self.call = call
		}
	}

	private let state: LockedState<State>

	init(keys: [ObservedKey], wantsPrior: Bool, handler: @escaping (StoredChange) -> Void) {
		self.keys = keys
		self.wantsPrior = wantsPrior
		self.state = LockedState(State(handler: Handler(handler)))
	}

	var isCancelled: Bool {
		state.withLock { $0.handler == nil }
	}

	/// Calls the handler unless the subscription was cancelled or the object it is tied to is gone.
	func deliver(_ change: StoredChange) {
		let (handler, isTieBroken) = state.withLock { state in
			(state.handler, state.tie.map { $0.object.object == nil } ?? false)
		}
		guard let handler else {
			return
		}
		if isTieBroken {
			// There is no deinit hook on another object without the Objective-C runtime, so a tie is checked when a
			// change arrives: the handler never runs once the object is gone.
			cancel()
			return
		}
		handler.call(change)
	}

	/// Removes the subscription from the hub and releases the handler; later changes are not delivered. Safe to call
	/// more than once, from any thread.
	func cancel() {
		let released = state.withLock { state in
			defer { state = State() }
			return state
		}
		guard released.handler != nil else {
			return
		}
		ChangeHub.shared.remove(self)
		// `released` goes out of scope here, outside every lock: the handler's captures and a tied owner may have
		// deinits that come back to the hub.
		withExtendedLifetime(released) {}
	}

	func tie(owner: AnyObject, to object: AnyObject) {
		let replaced = state.withLock { state -> (owner: AnyObject, object: Weak)? in
			guard state.handler != nil else {
				return nil
			}
			defer { state.tie = (owner, Weak(object: object)) }
			return state.tie
		}
		withExtendedLifetime(replaced) {}
	}

	func removeTie() {
		let released = state.withLock { state in
			defer { state.tie = nil }
			return state.tie
		}
		withExtendedLifetime(released) {}
	}
}

/// Tells observers about writes: every write through the package passes here (``Defaults/Store/write(_:forKey:)``,
/// ``Defaults/Store/removeValue(forKey:)``, the subscripts), and so do changes a store detects from outside.
///
/// Handlers run synchronously on the writing thread, before the write returns. A write while nothing is observed
/// anywhere costs one atomic load more than the store's own work.
final class ChangeHub: Sendable {
	private let externalDeliveries = NSRecursiveLock()
	static let shared = ChangeHub()

	private struct Slot {
		var subscriptions: [ChangeSubscription] = []
		/// The stored form last seen for the key, so that a change from outside has an old value: by the time a store
		/// reports it, the store holds only the new one.
		var lastKnownValue: Any?
	}

	/// How many (key, subscription) registrations exist; zero lets writes skip the hub entirely.
	private let registrationCount = Atomic<Int>(0)
	private let slots = LockedState<[ObservedKey: Slot]>([:])

	/// Registers `handler` for the keys `names` of their stores.
	func subscribe(
		to targets: [(store: any Defaults.Store, name: String)], wantsPrior: Bool,
		handler: @escaping (StoredChange) -> Void
	) -> ChangeSubscription {
		// Read outside the hub's lock: a store takes its own lock, and the two are never nested.
		var keys: [ObservedKey] = []
		var currentValues: [ObservedKey: Any] = [:]
		for target in targets {
			let key = ObservedKey(store: target.store, name: target.name)
			guard !keys.contains(key) else {
				continue
			}
			keys.append(key)
			currentValues[key] = target.store.storedValue(forKey: target.name)
		}
		let subscription = ChangeSubscription(keys: keys, wantsPrior: wantsPrior, handler: handler)
		slots.withLock { slots in
			for key in keys {
				slots[key, default: Slot(lastKnownValue: currentValues[key])].subscriptions.append(subscription)
				registrationCount.add(1, ordering: .releasing)
			}
		}
		return subscription
	}

	func remove(_ subscription: ChangeSubscription) {
		let removed = slots.withLock { slots in
			var removed: [ChangeSubscription] = []
			for key in subscription.keys {
				guard let index = slots[key]?.subscriptions.firstIndex(where: { $0 === subscription }) else {
					continue
				}
				removed.append(slots[key]!.subscriptions.remove(at: index))
				registrationCount.subtract(1, ordering: .releasing)
				if slots[key]!.subscriptions.isEmpty {
					slots[key] = nil
				}
			}
			return removed
		}
		// Released here, outside the lock: the handler's captures may have deinits that come back to the hub.
		_ = removed
	}

	/// Whether any key of any store is observed. One atomic load: this is all a write pays when nothing is observed.
	@inline(__always)
	var isObservingAnything: Bool {
		registrationCount.load(ordering: .acquiring) != 0
	}

	/// Stores `stored` for `name` in `store` (removes the value for `nil`) and tells the key's observers.
	@inline(__always)
	func commit(_ stored: Any?, forKey name: String, in store: some Defaults.Store) {
		guard isObservingAnything else {
			Self.apply(stored, forKey: name, in: store)
			return
		}
		commitObserved(stored, forKey: name, in: store)
	}

	private static func apply(_ stored: Any?, forKey name: String, in store: some Defaults.Store) {
		// Whatever is stored now is new: if it does not decode either, that is worth a report of its own.
		DecodingFailures.forget(key: name, in: store)
		if let stored {
			store.setStoredValue(stored, forKey: name)
		} else {
			store.removeStoredValue(forKey: name)
		}
	}

	private func commitObserved(_ stored: Any?, forKey name: String, in store: some Defaults.Store) {
		let key = ObservedKey(store: store, name: name)
		guard let subscriptions = slots.withLock({ $0[key]?.subscriptions }), !subscriptions.isEmpty else {
			Self.apply(stored, forKey: name, in: store)
			return
		}
		guard !Propagation.isSuppressed else {
			Self.apply(stored, forKey: name, in: store)
			remember(store.storedValue(forKey: name), for: key)
			return
		}
		let oldValue = store.storedValue(forKey: name)
		if subscriptions.contains(where: \.wantsPrior) {
			let prior = StoredChange(store: store, name: name, oldValue: oldValue, newValue: stored, isPrior: true)
			for subscription in subscriptions where subscription.wantsPrior {
				subscription.deliver(prior)
			}
		}
		Self.apply(stored, forKey: name, in: store)
		// After a removal a registered default shows through; observers see the key as it now reads.
		let newValue = stored ?? store.storedValue(forKey: name)
		remember(newValue, for: key)
		let change = StoredChange(store: store, name: name, oldValue: oldValue, newValue: newValue, isPrior: false)
		for subscription in subscriptions {
			subscription.deliver(change)
		}
	}

	/// Tells the observers of `names` that `store` changed them from outside; the store already holds the new values.
	func storeDidChangeExternally(_ store: some Defaults.Store, keys names: Set<String>) {
		guard isObservingAnything else {
			return
		}
		// A store's watcher and a flush can report changes from two threads at once; one at a time, each reading the
		// value as it is when delivered, the last delivery always carries the store's latest value. Recursive, since
		// a handler may flush, which may report again on the same thread.
		externalDeliveries.lock()
		defer { externalDeliveries.unlock() }
		for name in names.sorted() {
			let key = ObservedKey(store: store, name: name)
			guard slots.withLock({ $0[key] != nil }) else {
				continue
			}
			let newValue = store.storedValue(forKey: name)
			let found = slots.withLock { slots -> (subscriptions: [ChangeSubscription], oldValue: Any?)? in
				guard let slot = slots[key] else {
					return nil
				}
				let oldValue = slot.lastKnownValue
				slots[key]!.lastKnownValue = newValue
				return (slot.subscriptions, oldValue)
			}
			guard let found else {
				continue
			}
			let change = StoredChange(
				store: store, name: name, oldValue: found.oldValue, newValue: newValue, isPrior: false)
			for subscription in found.subscriptions {
				subscription.deliver(change)
			}
		}
	}

	private func remember(_ value: Any?, for key: ObservedKey) {
		slots.withLock { slots in
			if slots[key] != nil {
				slots[key]!.lastKnownValue = value
			}
		}
	}

	/// The number of keys with observers, for tests that check that observations are released.
	var observedKeyCount: Int {
		slots.withLock { $0.count }
	}

	/// The number of subscriptions on `name` in `store`.
	func subscriptionCount(forKey name: String, in store: any Defaults.Store) -> Int {
		slots.withLock { $0[ObservedKey(store: store, name: name)]?.subscriptions.count ?? 0 }
	}
}

extension Defaults.Store {
	/// The one write primitive of the package: stores `stored` (removes the value for `nil`) and tells observers.
	func commit(_ stored: Any?, forKey key: String) {
		ChangeHub.shared.commit(stored, forKey: key, in: self)
	}
}
