import Foundation
import Synchronization

/// Tells observers about writes: every write through the package's one write primitive (`Store.commit`, which the
/// subscripts, ``Defaults/Store/write(_:forKey:)`` and ``Defaults/Store/removeValue(forKey:)`` use) is bracketed
/// here when anything is observed, and changes a store detects from outside are reported here too.
///
/// Handlers run synchronously on the writing thread, before the write returns. A write while nothing is observed
/// anywhere costs one atomic load more than the store's own work.
@usableFromInline
final class ChangeHub: Sendable {
	private let externalDeliveries = NSRecursiveLock()
	@usableFromInline static let shared = ChangeHub()

	private struct Slot {
		/// Replaced, never changed in place: a delivery holds the list it found while the hub's lock is free again.
		var subscribers: SubscriberList
		/// The stored form last seen for the key, so that a change from outside has an old value: by the time a store
		/// reports it, the store holds only the new one.
		var lastKnownValue: Any?
	}

	/// Per observed store: how many of its keys are observed, and the hub's subscription to its outside changes,
	/// which lasts while any key of the store is observed.
	private let outsideObservations = LockedState<
		[ObjectIdentifier: (keys: Int, observation: Defaults.OutsideChangeObservation)]
	>([:])

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
		var storesOfKeys: [any Defaults.Store] = []
		for target in targets {
			let key = ObservedKey(store: target.store, name: target.name)
			guard !keys.contains(key) else {
				continue
			}
			keys.append(key)
			storesOfKeys.append(target.store)
			currentValues[key] = target.store.storedValue(forKey: target.name)
		}
		let subscription = ChangeSubscription(keys: keys, wantsPrior: wantsPrior)
		let subscriber = SubscriberList.Subscriber(subscription: subscription, handler: SubscriberList.Handler(handler))
		// Once per distinct key, as `remove` releases: a key named twice must not be counted twice.
		for store in storesOfKeys {
			listenToOutsideChanges(of: store)
		}
		let replaced = slots.withLock { slots in
			var replaced: [SubscriberList] = []
			for key in keys {
				let list = slots[key]?.subscribers ?? .empty
				replaced.append(list)
				slots[key, default: Slot(subscribers: .empty, lastKnownValue: currentValues[key])].subscribers =
					list.adding(subscriber)
				registrationCount.add(1, ordering: .releasing)
			}
			return replaced
		}
		withExtendedLifetime(replaced) {}
		return subscription
	}

	func remove(_ subscription: ChangeSubscription) {
		let (replaced, removedKeys) = slots.withLock { slots in
			var replaced: [SubscriberList] = []
			var removedKeys = 0
			for key in subscription.keys {
				guard let list = slots[key]?.subscribers, let remaining = list.removing(subscription) else {
					continue
				}
				replaced.append(list)
				removedKeys += 1
				registrationCount.subtract(1, ordering: .releasing)
				if remaining.subscribers.isEmpty {
					slots[key] = nil
				} else {
					slots[key]!.subscribers = remaining
				}
			}
			return (replaced, removedKeys)
		}
		let ended = outsideObservations.withLock { observations in
			var ended: [Defaults.OutsideChangeObservation] = []
			for key in subscription.keys where removedKeys > 0 {
				observations[key.store]?.keys -= 1
				if let entry = observations[key.store], entry.keys <= 0 {
					ended.append(entry.observation)
					observations[key.store] = nil
				}
			}
			return ended
		}
		ended.forEach { $0.cancel() }
		// Released here, outside the lock: the last list holding the handler releases it, and the handler's captures
		// may have deinits that come back to the hub.
		withExtendedLifetime(replaced) {}
	}

	/// Subscribes to the outside changes of `store` if no key of it was observed yet, and counts one more key.
	private func listenToOutsideChanges(of store: any Defaults.Store) {
		let id = ObjectIdentifier(store)
		let isNew = outsideObservations.withLock { observations in
			if observations[id] != nil {
				observations[id]!.keys += 1
				return false
			}
			return true
		}
		guard isNew else {
			return
		}
		let weakStore = WeakStore(store)
		let observation = store.observeOutsideChanges { keys in
			guard let store = weakStore.store else {
				return
			}
			ChangeHub.shared.storeDidChangeExternally(store, keys: keys)
		}
		let redundant = outsideObservations.withLock { observations -> Defaults.OutsideChangeObservation? in
			if observations[id] != nil {
				// Another thread subscribed meanwhile: count this key there, and drop this subscription.
				observations[id]!.keys += 1
				return observation
			}
			observations[id] = (1, observation)
			return nil
		}
		redundant?.cancel()
	}

	/// Whether any key of any store is observed. One atomic load: this is all a write pays when nothing is observed.
	@inline(__always)
	var isObservingAnything: Bool {
		registrationCount.load(ordering: .acquiring) != 0
	}

	/// Makes a write with `write` and tells the observers of `name` in `store`: a prior notification before it, and
	/// the change after it, as the key now reads. The write itself belongs to the caller (``Defaults/Store``'s
	/// `commit`); the hub only brackets it. Call it only when ``isObservingAnything``.
	func deliver(_ stored: Any?, forKey name: String, in store: some Defaults.Store, around write: () -> Void) {
		let key = ObservedKey(store: store, name: name)
		guard let subscribers = slots.withLock({ $0[key]?.subscribers }) else {
			write()
			return
		}
		guard !Propagation.isSuppressed else {
			write()
			remember(store.storedValue(forKey: name), for: key)
			return
		}
		let oldValue = store.storedValue(forKey: name)
		if subscribers.wantsPrior {
			subscribers.deliver(
				StoredChange(store: store, name: name, oldValue: oldValue, newValue: stored, isPrior: true))
		}
		write()
		// After a removal a registered default shows through; observers see the key as it now reads.
		let newValue = stored ?? store.storedValue(forKey: name)
		remember(newValue, for: key)
		subscribers.deliver(
			StoredChange(store: store, name: name, oldValue: oldValue, newValue: newValue, isPrior: false))
	}

	/// Tells the observers of `names` that `store` changed them from outside; the store already holds the new values.
	func storeDidChangeExternally(_ store: any Defaults.Store, keys names: Set<String>) {
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
			let found = slots.withLock { slots -> (subscribers: SubscriberList, oldValue: Any?)? in
				guard let slot = slots[key] else {
					return nil
				}
				let oldValue = slot.lastKnownValue
				slots[key]!.lastKnownValue = newValue
				return (slot.subscribers, oldValue)
			}
			guard let found else {
				continue
			}
			found.subscribers.deliver(
				StoredChange(store: store, name: name, oldValue: found.oldValue, newValue: newValue, isPrior: false))
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
		slots.withLock { $0[ObservedKey(store: store, name: name)]?.subscribers.subscribers.count ?? 0 }
	}
}

/// A store held weakly by a `Sendable` closure: only its identity and its thread-safe reads are used.
private final class WeakStore: @unchecked Sendable {
	weak var store: (any Defaults.Store)?

	init(_ store: any Defaults.Store) {
		self.store = store
	}
}
