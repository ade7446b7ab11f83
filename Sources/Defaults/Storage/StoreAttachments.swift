/// What the package keeps beside one store in this process: the runtime the layer above made for it, and the lock
/// that holds the store for an atomic update when it does not update itself (see `withAtomicUpdate(_:apply:)`).
///
/// The stores the package makes hold theirs in a stored property (`HoldsItsAttachments`), found in one step and
/// gone with the store. A store the package did not make (`UserDefaults`, a user's own `Defaults.Store`) has no
/// room for it, so its attachments live in `ForeignStoreAttachments`, a table held weakly by the store.
final class StoreAttachments: Sendable {
	/// The runtime the layer above made for the store (Keys' `StoreRuntime`), made on first use. Storage knows it only
	/// as the receiver of the store's outside changes.
	private let runtime = LockedState<(any OutsideChangeReceiver)?>(nil)
	/// Holds the store for an atomic update made by this process, when the store does not update itself.
	let updateLock = LockedState(())

	init() {}

	/// The runtime, made by `make` on first use. The runtime is always of one type, the one `make` returns.
	func runtime<Runtime: OutsideChangeReceiver>(orMake make: () -> Runtime) -> Runtime {
		runtime.withLock { runtime in
			if let existing = runtime {
				// Only the layer above makes runtimes, always of one type.
				return unsafeDowncast(existing, to: Runtime.self)
			}
			let made = make()
			runtime = made
			return made
		}
	}

	/// The runtime, if one was made: a store without one has no keys, observers or listeners to tell of a change.
	var existingRuntime: (any OutsideChangeReceiver)? {
		runtime.withLock { $0 }
	}
}

/// The side of a store's runtime that Storage sees: it hears the outside changes the store reports.
protocol OutsideChangeReceiver: AnyObject, Sendable {
	/// Takes the report that `keys` of `store` changed outside the package's writes; the store holds the new values.
	func receiveOutsideChanges(_ keys: Set<String>, from store: any Defaults.Store)
}

/// A store the package made, which keeps its attachments itself.
protocol HoldsItsAttachments: Defaults.Store {
	var attachments: StoreAttachments { get }
}

extension Defaults.Store {
	/// The store's attachments: its own, or, for a store the package did not make, those the table keeps for it.
	var attachments: StoreAttachments {
		if let holder = self as? any HoldsItsAttachments {
			return holder.attachments
		}
		return ForeignStoreAttachments.attachments(of: self)
	}

	/// The store's attachments if it has any yet; looking does not make them.
	var existingAttachments: StoreAttachments? {
		if let holder = self as? any HoldsItsAttachments {
			return holder.attachments
		}
		return ForeignStoreAttachments.existingAttachments(of: self)
	}
}

/// The attachments of stores the package did not make, by store identity: process-wide only because such a store
/// has nowhere else to keep them. An entry holds its store weakly, so a store made later at a freed store's address
/// gets attachments of its own (no failures, listeners or count it did not earn); entries of freed stores are
/// dropped when another store gets its attachments.
enum ForeignStoreAttachments {
	private final class Entry: @unchecked Sendable {
		// Unchecked: `store` is written once, in `init`, and read under the table's lock.
		weak var store: (any Defaults.Store)?
		let attachments = StoreAttachments()

		init(_ store: any Defaults.Store) {
			self.store = store
		}
	}

	private static let table = LockedState<[ObjectIdentifier: Entry]>([:])

	static func attachments(of store: any Defaults.Store) -> StoreAttachments {
		let id = ObjectIdentifier(store)
		let (attachments, dropped) = table.withLock { table -> (StoreAttachments, [Entry]) in
			if let entry = table[id], entry.store === store {
				return (entry.attachments, [])
			}
			var dropped: [Entry] = []
			for (key, entry) in table where entry.store == nil {
				dropped.append(entry)
				table[key] = nil
			}
			let entry = Entry(store)
			table[id] = entry
			return (entry.attachments, dropped)
		}
		// Released here, outside the lock: a dropped runtime's listeners may have deinits that come back here.
		withExtendedLifetime(dropped) {}
		return attachments
	}

	static func existingAttachments(of store: any Defaults.Store) -> StoreAttachments? {
		table.withLock { table in
			table[ObjectIdentifier(store)].flatMap { $0.store === store ? $0.attachments : nil }
		}
	}
}
