import Synchronization

extension Defaults {
	/// A subscription to a store's reports of changes made outside this process's writes; it ends when cancelled or
	/// released.
	///
	/// ```swift
	/// let observation = store.observeOutsideChanges { keys in print("changed elsewhere:", keys) }
	/// observation.cancel()
	/// ```
	public final class OutsideChangeObservation: Sendable {
		private let onCancel: LockedState<(@Sendable () -> Void)?>

		/// Creates an observation that calls `onCancel` once, when it is cancelled or released.
		public init(onCancel: @escaping @Sendable () -> Void) {
			self.onCancel = LockedState(onCancel)
		}

		/// Ends the subscription; the handler is not called again. Safe to call more than once.
		public func cancel() {
			onCancel.withLock { onCancel in
				defer { onCancel = nil }
				return onCancel
			}?()
		}

		deinit {
			cancel()
		}
	}
}

extension Defaults.Store {
	/// Calls `onChange` with the names of keys whose values changed without a write through this process's
	/// package: another process rewrote the store's file, a sync engine applied a remote change. The store already
	/// holds the new values when `onChange` runs.
	///
	/// This is how observers hear such changes: the change hub subscribes here for every store whose keys are
	/// observed. The default implementation delivers what the store reports with ``didChangeExternally(keys:)``, so
	/// a store only has to report; a store that can never change from outside has nothing to do.
	///
	/// ```swift
	/// let observation = store.observeOutsideChanges { keys in print(keys) }
	/// ```
	public func observeOutsideChanges(
		_ onChange: @escaping @Sendable (Set<String>) -> Void
	) -> Defaults.OutsideChangeObservation {
		OutsideChangeChannels.subscribe(to: self, onChange)
	}

	/// Reports that the values of `keys` changed without going through the package, for example because another
	/// process rewrote the store's file, to everyone subscribed with ``observeOutsideChanges(_:)``.
	///
	/// A store calls this after it has taken the new values in, so that observers read them. Only observed keys
	/// cost anything; the old value an observer gets is the last one the package saw for the key. Such changes are
	/// heard also inside `Defaults.withoutPropagation`, which hides only writes made in its closure.
	///
	/// ```swift
	/// store.didChangeExternally(keys: ["volume"])
	/// ```
	public func didChangeExternally(keys: Set<String>) {
		OutsideChangeChannels.report(keys, from: self)
	}
}

/// The subscribers to each store's outside-change reports: storage's side of the seam, knowing nothing of who
/// listens.
enum OutsideChangeChannels {
	private struct Channels {
		var nextID: UInt64 = 0
		var handlers: [ObjectIdentifier: [UInt64: @Sendable (Set<String>) -> Void]] = [:]
	}

	private static let channels = LockedState(Channels())

	static func subscribe(
		to store: some Defaults.Store, _ onChange: @escaping @Sendable (Set<String>) -> Void
	) -> Defaults.OutsideChangeObservation {
		let storeID = ObjectIdentifier(store)
		let id = channels.withLock { channels in
			channels.nextID += 1
			channels.handlers[storeID, default: [:]][channels.nextID] = onChange
			return channels.nextID
		}
		return Defaults.OutsideChangeObservation {
			let removed = channels.withLock { channels in
				defer {
					if channels.handlers[storeID]?.isEmpty == true {
						channels.handlers[storeID] = nil
					}
				}
				return channels.handlers[storeID]?.removeValue(forKey: id)
			}
			// Released outside the lock: its captures may have deinits that come back here.
			_ = removed
		}
	}

	static func report(_ keys: Set<String>, from store: some Defaults.Store) {
		guard !keys.isEmpty else {
			return
		}
		let handlers = channels.withLock { $0.handlers[ObjectIdentifier(store)].map { Array($0.values) } ?? [] }
		for handler in handlers {
			handler(keys)
		}
	}
}
