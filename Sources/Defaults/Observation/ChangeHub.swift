import Foundation

/// Where observation subscribes: each key's observers live in its store's runtime (`StoreRuntime+Listeners.swift`,
/// which also says who hears a write); the hub turns a list of keys into one subscription over their runtimes.
///
/// Handlers run synchronously on the thread that changed the value, before the change returns.
@usableFromInline
final class ChangeHub: Sendable {
	@usableFromInline static let shared = ChangeHub()

	/// Registers `handler` for the keys `names` of their stores; a key named twice is subscribed once.
	func subscribe(
		to targets: [(store: any Defaults.Store, name: String)], wantsPrior: Bool,
		handler: @escaping (StoredChange) -> Void
	) -> ChangeSubscription {
		var keys: [ObservedKey] = []
		var currentValues: [Any?] = []
		for target in targets {
			let key = ObservedKey(runtime: StoreRuntime.of(target.store), name: target.name)
			guard !keys.contains(key) else {
				continue
			}
			keys.append(key)
			// Read before the runtime's lock is taken: a store takes its own lock, and the two are never nested.
			currentValues.append(target.store.storedValue(forKey: target.name))
		}
		let subscription = ChangeSubscription(keys: keys, wantsPrior: wantsPrior)
		let subscriber = SubscriberList.Subscriber(subscription: subscription, handler: SubscriberList.Handler(handler))
		for (key, currentValue) in zip(keys, currentValues) {
			key.runtime.addObserver(subscriber, forKey: key.name, currentValue: currentValue)
		}
		return subscription
	}

	func remove(_ subscription: ChangeSubscription) {
		for key in subscription.keys {
			key.runtime.removeObserver(subscription, forKey: key.name)
		}
	}

	/// The number of subscriptions on `name` in `store`.
	func subscriptionCount(forKey name: String, in store: any Defaults.Store) -> Int {
		StoreRuntime.of(store).listenerCount(forKey: name).observers
	}
}
