import Foundation

/// Where observation subscribes: each key's observers live in its store's runtime (`StoreRuntime+Listeners.swift`,
/// which also says who hears a write); the hub turns a list of keys into one subscription over their runtimes.
///
/// Handlers run synchronously on the thread that changed the value, before the change returns.
@usableFromInline
final class ChangeHub: Sendable {
	@usableFromInline static let shared = ChangeHub()

	/// Registers `handler` for `targets`, keys in their stores (each key's own, or the one a scope stands in for it); a
	/// key named twice is subscribed once.
	func subscribe(
		to targets: [Defaults.Keys], wantsPrior: Bool, handler: @escaping (StoredChange) -> Void
	) -> ChangeSubscription {
		var keys: [ObservedKey] = []
		var currentValues: [ObservedForm] = []
		for target in targets {
			let store = target.suite
			let key = ObservedKey(runtime: StoreRuntime.of(store), name: target.name, key: target)
			guard !keys.contains(key) else {
				continue
			}
			keys.append(key)
			// Read before the runtime's lock is taken: a store takes its own lock, and the two are never nested.
			currentValues.append(store.observedForm(forKey: target.name))
		}
		let subscription = ChangeSubscription(keys: keys, wantsPrior: wantsPrior)
		let subscriber = SubscriberList.Subscriber(subscription: subscription, handler: SubscriberList.Handler(handler))
		for (key, currentValue) in zip(keys, currentValues) {
			key.runtime.addObserver(subscriber, forKey: key.name, current: currentValue)
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
