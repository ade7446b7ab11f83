import Foundation

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
