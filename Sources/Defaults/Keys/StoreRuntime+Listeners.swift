import Foundation
import Synchronization

// Who hears a write, and who hears an outside change: the one answer.
//
// A write through the package (`commit`: the subscripts, `write(_:forKey:)`, `removeValue(forKey:)`, resets,
// migrations, sync's remote values) is heard, in this order, by
//   1. the key's observers (`observe`, `updates`, `@Default`, `ObservableValue`): a prior notification before the
//      write for those that want one, the change after it, decoded as the key now reads;
//   2. the key's commit taps (sync): a handler per key name, after the write, with nothing decoded.
// An outside change (`Store.reportOutsideChanges(_:)`) is heard by the observers of each changed key whose value as
// read changed, with the last value the package saw as the old value, and then by the outside listeners (sync), with
// the names only (a change beneath a lock is one to sync).
// Every listener runs on the thread that made the change, before the change returns.

/// One key's listeners, as a write finds them.
struct ListenerSlot {
	/// Replaced, never changed in place: a delivery holds the list it found while the lock is free again.
	var observers: SubscriberList = .empty
	var taps: [CommitTap] = []
	/// What a read of the key found last (with the value beneath an override in text), so that an outside change
	/// has an old value: by the time a store reports it, the store holds only the new one.
	var lastKnown = ObservedForm()

	var isEmpty: Bool { observers.subscribers.isEmpty && taps.isEmpty }
}

/// A handler that hears that a key was written, not how: far cheaper per write than an observation, which reads the
/// old value and builds a change. A class, so that a write copies one reference per tap.
final class CommitTap: Sendable {
	let call: @Sendable () -> Void

	init(_ call: @escaping @Sendable () -> Void) {
		self.call = call
	}
}

extension StoreRuntime {
	// MARK: Writes

	/// The package's one write: stores `stored` in `store` (removes the value for `nil`), forgets that the key's old
	/// value failed to decode, counts the change, and tells the key's listeners.
	///
	/// While nothing listens to any key of the store, a write costs one atomic load more than the store's own work
	/// and the count.
	///
	/// - Parameter beneathLocks: the value is the user's even when an administrator locked the key (sync's remote
	///   values, migrations): it is stored beneath the lock, and the key still reads the locked value.
	@inline(__always)
	func commit(_ stored: Any?, forKey key: String, in store: some Defaults.Store, beneathLocks: Bool = false) {
		if registrationCount.load(ordering: .acquiring) == 0 {
			apply(stored, forKey: key, in: store, beneathLocks: beneathLocks)
		} else {
			commitHeard(stored, forKey: key, in: store, beneathLocks: beneathLocks)
		}
	}

	/// ``commit(_:forKey:in:beneathLocks:)`` of a value that is there (not a removal), in the user's layer: while
	/// nothing listens, the store's primitive gets the value as it is.
	@inline(__always)
	func commit(value: Any, forKey key: String, in store: any Defaults.Store) {
		if registrationCount.load(ordering: .acquiring) == 0 {
			forgetFailure(ofKey: key)
			store.setStoredValue(value, forKey: key)
			writeCounter?.advance()
		} else {
			commitHeard(value, forKey: key, in: store, beneathLocks: false)
		}
	}

	private func apply(_ stored: Any?, forKey key: String, in store: some Defaults.Store, beneathLocks: Bool) {
		forgetFailure(ofKey: key)
		if beneathLocks, let layered = store as? any LayeredStore {
			layered.storeBeneathLocks(stored, forKey: key)
		} else if let stored {
			store.setStoredValue(stored, forKey: key)
		} else {
			store.removeStoredValue(forKey: key)
		}
		writeCounter?.advance()
	}

	private func commitHeard(
		_ stored: Any?, forKey name: String, in store: some Defaults.Store, beneathLocks: Bool
	) {
		guard let slot = slots.withLock({ $0[name] }) else {
			apply(stored, forKey: name, in: store, beneathLocks: beneathLocks)
			return
		}
		let observers = slot.observers
		if observers.subscribers.isEmpty {
			apply(stored, forKey: name, in: store, beneathLocks: beneathLocks)
		} else if Propagation.isSuppressed {
			apply(stored, forKey: name, in: store, beneathLocks: beneathLocks)
			remember(store.observedForm(forKey: name), forKey: name)
		} else {
			// Observers see the key as it reads, before and after: after a removal a registered default shows
			// through, and a launch argument shadows what a store with layers stored (or, when a key cannot read
			// its text, the user's value beneath it reads).
			let layered = store as? any LayeredStore
			let old: ObservedForm
			let after: ObservedForm
			if let layered {
				let forms = layered.observedForms(forKey: name, storing: .some(stored))
				(old, after) = (forms.now, forms.after ?? forms.now)
			} else {
				(old, after) = (ObservedForm(value: store.storedValue(forKey: name)), ObservedForm(value: stored))
			}
			// A write of a key a lock, or an argument or a variable that is no text, sets changes nothing a read sees:
			// observers hear nothing. (Beneath text, a key that cannot read the text reads the write: its
			// subscription decides, `ChangeSubscription.leavesUnchanged`.)
			if old.isFromAbove, !old.isOverrideText {
				apply(stored, forKey: name, in: store, beneathLocks: beneathLocks)
			} else {
				if observers.wantsPrior {
					observers.deliver(
						StoredChange(store: store, name: name, old: old, new: after, isPrior: true, isWrite: true))
				}
				apply(stored, forKey: name, in: store, beneathLocks: beneathLocks)
				let new =
					layered != nil
					? store.observedForm(forKey: name) : ObservedForm(value: stored ?? store.storedValue(forKey: name))
				remember(new, forKey: name)
				observers.deliver(
					StoredChange(store: store, name: name, old: old, new: new, isPrior: false, isWrite: true))
			}
		}
		for tap in slot.taps {
			tap.call()
		}
	}

	private func remember(_ form: ObservedForm, forKey name: String) {
		slots.withLock { slots in
			if slots[name] != nil {
				slots[name]!.lastKnown = form
			}
		}
	}

	// MARK: Outside changes

	/// Counts the change and tells the observers of `names`, then the outside listeners; the store already holds the
	/// new values.
	func receiveOutsideChanges(_ names: Set<String>, from store: any Defaults.Store) {
		changeCounter?.advance()
		// A store's watcher and a flush can report changes from two threads at once; one at a time, each reading the
		// value as it is when delivered, the last delivery always carries the store's latest value.
		outsideDeliveries.lock()
		defer { outsideDeliveries.unlock() }
		if registrationCount.load(ordering: .acquiring) != 0 {
			for name in names.sorted() {
				guard slots.withLock({ $0[name].map { !$0.observers.subscribers.isEmpty } ?? false }) else {
					continue
				}
				let new = store.observedForm(forKey: name)
				let found = slots.withLock { slots -> (observers: SubscriberList, old: ObservedForm)? in
					guard let slot = slots[name],
						// Only a change of what the key reads: a value that changed beneath a lock or a launch
						// argument, or a layer that changed back, is no change to the key's observers.
						!slot.lastKnown.isSame(as: new)
					else {
						return nil
					}
					slots[name]!.lastKnown = new
					return (slot.observers, slot.lastKnown)
				}
				guard let found else {
					continue
				}
				found.observers.deliver(
					StoredChange(store: store, name: name, old: found.old, new: new, isPrior: false))
			}
		}
		let listeners = outsideListeners.withLock { $0.handlers.sorted { $0.key < $1.key }.map(\.value) }
		for listener in listeners {
			listener(names)
		}
	}

	/// Calls `handler` with the names of the keys each outside change of the store changed, until the returned
	/// closure is called.
	package func addOutsideListener(_ handler: @escaping @Sendable (Set<String>) -> Void) -> @Sendable () -> Void {
		let id = outsideListeners.withLock { listeners in
			listeners.nextID += 1
			listeners.handlers[listeners.nextID] = handler
			return listeners.nextID
		}
		return { [self] in
			let removed = outsideListeners.withLock { $0.handlers.removeValue(forKey: id) }
			// Released outside the lock: its captures may have deinits that come back here.
			withExtendedLifetime(removed) {}
		}
	}

	// MARK: Registering listeners

	/// Adds `subscriber` to the observers of `name`; `current` is what a read of the key finds now, the old value of
	/// the first outside change if no write comes first.
	func addObserver(_ subscriber: SubscriberList.Subscriber, forKey name: String, current: ObservedForm) {
		let replaced = slots.withLock { slots in
			var slot = slots[name] ?? ListenerSlot()
			let list = slot.observers
			if list.subscribers.isEmpty {
				slot.lastKnown = current
			}
			slot.observers = list.adding(subscriber)
			slots[name] = slot
			registrationCount.add(1, ordering: .releasing)
			return list
		}
		withExtendedLifetime(replaced) {}
	}

	/// Removes `subscription` from the observers of `name`, if it is there.
	func removeObserver(_ subscription: ChangeSubscription, forKey name: String) {
		let replaced = slots.withLock { slots -> SubscriberList? in
			guard let list = slots[name]?.observers, let remaining = list.removing(subscription) else {
				return nil
			}
			registrationCount.subtract(1, ordering: .releasing)
			slots[name]!.observers = remaining
			if slots[name]!.isEmpty {
				slots[name] = nil
			}
			return list
		}
		// Released here, outside the lock: the last list holding the handler releases it, and the handler's captures
		// may have deinits that come back to the runtime.
		withExtendedLifetime(replaced) {}
	}

	/// Calls the handler of a key's name each time that key is written through the package, on the writing thread,
	/// after the write and its observers; until the returned closure is called.
	package func addCommitTaps(_ handlers: [String: @Sendable () -> Void]) -> @Sendable () -> Void {
		let taps = handlers.mapValues(CommitTap.init)
		slots.withLock { slots in
			for (name, tap) in taps {
				slots[name, default: ListenerSlot()].taps.append(tap)
				registrationCount.add(1, ordering: .releasing)
			}
		}
		// Safe to call twice: a tap is found by identity, so a second call finds nothing to remove.
		return { [self] in
			slots.withLock { slots in
				for (name, tap) in taps {
					guard let index = slots[name]?.taps.firstIndex(where: { $0 === tap }) else {
						continue
					}
					slots[name]!.taps.remove(at: index)
					registrationCount.subtract(1, ordering: .releasing)
					if slots[name]!.isEmpty {
						slots[name] = nil
					}
				}
			}
		}
	}

	/// How many handlers a write of `name` calls now: observers and taps.
	func listenerCount(forKey name: String) -> (observers: Int, taps: Int) {
		slots.withLock { ($0[name]?.observers.subscribers.count ?? 0, $0[name]?.taps.count ?? 0) }
	}
}
