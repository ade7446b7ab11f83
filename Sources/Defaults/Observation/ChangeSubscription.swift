import Foundation
import Synchronization

/// A key in a store, as a subscription holds it: the store's runtime, which files the key's observers, the name, and
/// the key, which knows whether it reads the text of a launch argument or variable that sets it.
struct ObservedKey: Equatable, Sendable {
	let runtime: StoreRuntime
	let name: String
	let key: Defaults.Keys

	static func == (left: ObservedKey, right: ObservedKey) -> Bool {
		left.runtime === right.runtime && left.name == right.name
	}
}

/// A registration with the hub for one or more keys. Cancelling it removes it from the hub, which alone holds the
/// handler, so the handler and everything it captured are released also while the subscription object itself is still
/// referenced.
///
/// Delivery asks ``admitsDelivery()`` before each call of the handler: one atomic load while the subscription is
/// neither cancelled nor tied to an object's lifetime, so that a change heard by many observers takes no lock per
/// observer.
final class ChangeSubscription: Sendable {
	let keys: [ObservedKey]
	let wantsPrior: Bool

	private enum Status {
		static let cancelled: UInt8 = 1
		static let tied: UInt8 = 2
	}

	/// ``Status`` bits. `tied` is set only while `tie` holds something, so that untied deliveries skip its lock.
	private let status = Atomic<UInt8>(0)

	/// A lifetime tie: `owner` is kept alive until `object` is gone (see `Defaults.Observation.tieToLifetime`).
	private let tie = LockedState<(owner: AnyObject, object: Weak)?>(nil)

	struct Weak {
		weak var object: AnyObject?
	}

	init(keys: [ObservedKey], wantsPrior: Bool) {
		self.keys = keys
		self.wantsPrior = wantsPrior
	}

	/// Whether `change`, in which a launch argument or environment variable in text is involved (`beneath`), leaves
	/// what this subscription's key of its name reads as it was: a write beneath text the key reads, or an outside
	/// change after which the key reads what it read (text it skips came or went above a value that stayed).
	func leavesUnchanged(_ change: StoredChange, _ beneath: StoredChange.BeneathOverrides) -> Bool {
		// A subscription of one key hears that key's changes only; of several, the store tells same-named keys apart.
		let runtime = keys.count == 1 ? keys[0].runtime : StoreRuntime.of(change.store)
		guard let observed = keys.first(where: { $0.name == change.name && $0.runtime === runtime }) else {
			return false
		}
		let key = observed.key
		if beneath.isWrite {
			return beneath.isNewOverrideText && change.newValue.map(key.readsOverrideText) ?? false
		}
		func read(_ value: Any?, isOverrideText: Bool, beneath: Any?) -> Any? {
			guard isOverrideText, let value, !key.readsOverrideText(value) else {
				return value
			}
			return beneath
		}
		return Defaults.PropertyList.isEqualOrBothAbsent(
			read(change.oldValue, isOverrideText: beneath.isOldOverrideText, beneath: beneath.old),
			read(change.newValue, isOverrideText: beneath.isNewOverrideText, beneath: beneath.new))
	}

	var isCancelled: Bool {
		status.load(ordering: .acquiring) & Status.cancelled != 0
	}

	/// Whether the handler may run for a change now: not cancelled, and the object it is tied to (if any) still alive.
	@inline(__always)
	func admitsDelivery() -> Bool {
		let status = status.load(ordering: .acquiring)
		if status == 0 {
			return true
		}
		if status & Status.cancelled != 0 {
			return false
		}
		return isTieIntact()
	}

	private func isTieIntact() -> Bool {
		let isBroken = tie.withLock { tie in
			tie.map { $0.object.object == nil } ?? false
		}
		if isBroken {
			// There is no deinit hook on another object without the Objective-C runtime, so a tie is checked when a
			// change arrives: the handler never runs once the object is gone.
			cancel()
			return false
		}
		return !isCancelled
	}

	/// Removes the subscription from the hub, which releases the handler; later changes are not delivered. Safe to call
	/// more than once, from any thread.
	func cancel() {
		let previous = status.bitwiseOr(Status.cancelled, ordering: .acquiringAndReleasing).oldValue
		guard previous & Status.cancelled == 0 else {
			return
		}
		ChangeHub.shared.remove(self)
		let released = tie.withLock { tie in
			defer { tie = nil }
			return tie
		}
		// Released here, outside every lock: a tied owner may have a deinit that comes back to the hub.
		withExtendedLifetime(released) {}
	}

	func tie(owner: AnyObject, to object: AnyObject) {
		let replaced = tie.withLock { tie -> (owner: AnyObject, object: Weak)? in
			// `cancel` sets its bit before it empties the tie under this lock, so a tie made after that sees the bit
			// and a tie made before is emptied: a cancelled subscription never keeps its owner alive.
			guard !isCancelled else {
				return nil
			}
			defer {
				tie = (owner, Weak(object: object))
				status.bitwiseOr(Status.tied, ordering: .releasing)
			}
			return tie
		}
		withExtendedLifetime(replaced) {}
	}

	func removeTie() {
		let released = tie.withLock { tie in
			defer {
				tie = nil
				status.bitwiseAnd(~Status.tied, ordering: .releasing)
			}
			return tie
		}
		withExtendedLifetime(released) {}
	}
}
