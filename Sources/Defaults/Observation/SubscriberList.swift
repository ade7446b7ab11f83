/// The subscribers of one key, as one delivery sees them: immutable, so that the hub hands a delivery the list with
/// one lookup under its lock and the delivery calls every handler with no lock held. Subscribing and cancelling
/// replace the key's list with a new one; a delivery under way finishes with the list it started with.
final class SubscriberList: @unchecked Sendable {
	/// A handler as the hub holds it: a class, so that handing it out of the list copies one reference, not a closure
	/// context that the generic lock helper would re-wrap in a thunk (an allocation per observer per change).
	final class Handler {
		let call: (StoredChange) -> Void

		init(_ call: @escaping (StoredChange) -> Void) {
			self.call = call
		}
	}

	struct Subscriber {
		let subscription: ChangeSubscription
		let handler: Handler
	}

	/// In the order they subscribed. Never mutated: the unchecked conformance rests on that.
	let subscribers: ContiguousArray<Subscriber>
	/// Whether any subscriber wants to hear a change before it is made, so that a write without one skips that pass.
	let wantsPrior: Bool

	static let empty = SubscriberList(ContiguousArray())

	private init(_ subscribers: ContiguousArray<Subscriber>) {
		self.subscribers = subscribers
		self.wantsPrior = subscribers.contains { $0.subscription.wantsPrior }
	}

	func adding(_ subscriber: Subscriber) -> SubscriberList {
		var subscribers = subscribers
		subscribers.append(subscriber)
		return SubscriberList(subscribers)
	}

	/// The list without `subscription`, or `nil` when it is not in it.
	func removing(_ subscription: ChangeSubscription) -> SubscriberList? {
		guard let index = subscribers.firstIndex(where: { $0.subscription === subscription }) else {
			return nil
		}
		var subscribers = subscribers
		subscribers.remove(at: index)
		return SubscriberList(subscribers)
	}

	/// Calls the handler of every subscriber that is still active (and, for `change.isPrior`, wants prior changes),
	/// in the order they subscribed, on the calling thread.
	func deliver(_ change: StoredChange) {
		// The list holds every subscriber for as long as this runs, so each is used as a guaranteed reference: no
		// retain and release per observer (four atomic operations, more than all the rest of an observer's share).
		let isPrior = change.isPrior
		// Only where a launch argument or variable in text is involved may a change leave what one key reads as it
		// was and not another's (one that reads the text, one that skips it): then each subscription asks its key.
		let beneathOverrides = change.beneathOverrides
		for index in subscribers.indices {
			let admits = Unmanaged.passUnretained(subscribers[index].subscription)._withUnsafeGuaranteedRef {
				subscription in
				guard (!isPrior || subscription.wantsPrior) && subscription.admitsDelivery() else {
					return false
				}
				guard let beneathOverrides else {
					return true
				}
				return !subscription.leavesUnchanged(change, beneathOverrides)
			}
			if admits {
				Unmanaged.passUnretained(subscribers[index].handler)._withUnsafeGuaranteedRef { $0.call(change) }
			}
		}
	}
}
