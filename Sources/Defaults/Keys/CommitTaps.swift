import Synchronization

/// Hears the names of keys written through `commit` in a store, for machinery beside the package (sync) that needs
/// to know that a key changed but not how: far cheaper per write than an observation, which reads the old value and
/// builds a change for each write.
///
/// While no tap exists, a write pays one relaxed atomic load for it.
enum CommitTaps {
	private struct Tap {
		let names: Set<String>
		let handler: @Sendable (String) -> Void
	}

	private static let count = Atomic<Int>(0)
	private static let taps = Mutex<(nextID: UInt64, byStore: [ObjectIdentifier: [UInt64: Tap]])>((0, [:]))

	@inline(__always)
	static var isActive: Bool {
		count.load(ordering: .relaxed) != 0
	}

	/// Calls `handler` with the name of each key among `names` written in `store` through the package, on the
	/// writing thread, after the write; until the returned closure is called.
	static func add(
		names: Set<String>, in store: any Defaults.Store, handler: @escaping @Sendable (String) -> Void
	) -> @Sendable () -> Void {
		let storeID = ObjectIdentifier(store)
		let id = taps.withLock { taps in
			taps.nextID += 1
			taps.byStore[storeID, default: [:]][taps.nextID] = Tap(names: names, handler: handler)
			return taps.nextID
		}
		count.add(1, ordering: .relaxed)
		return {
			let removed = taps.withLock { taps in
				defer {
					if taps.byStore[storeID]?.isEmpty == true {
						taps.byStore[storeID] = nil
					}
				}
				return taps.byStore[storeID]?.removeValue(forKey: id)
			}
			if removed != nil {
				count.subtract(1, ordering: .relaxed)
			}
		}
	}

	/// Tells the taps of `store` that `key` was written.
	static func note(_ key: String, in store: some Defaults.Store) {
		let handlers = taps.withLock { taps -> [@Sendable (String) -> Void] in
			guard let storeTaps = taps.byStore[ObjectIdentifier(store)] else {
				return []
			}
			return storeTaps.values.compactMap { $0.names.contains(key) ? $0.handler : nil }
		}
		for handler in handlers {
			handler(key)
		}
	}
}
