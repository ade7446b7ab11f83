import Synchronization

/// Hears the names of keys written through `commit` in a store, for machinery beside the package (sync) that needs
/// to know that a key changed but not how: far cheaper per write than an observation, which reads the old value and
/// builds a change for each write.
///
/// While no tap exists, a write pays one relaxed atomic load for it.
enum CommitTaps {
	private struct Tap {
		let id: UInt64
		let names: Set<String>
		let handler: @Sendable (String) -> Void
	}

	/// The taps of one store, replaced (never changed) when one is added or removed, so that a write takes the list
	/// out of the lock and calls its handlers without copying them into a new array.
	private final class TapList: Sendable {
		let taps: [Tap]

		init(_ taps: [Tap]) {
			self.taps = taps
		}
	}

	private static let count = Atomic<Int>(0)
	private static let taps = Mutex<(nextID: UInt64, byStore: [ObjectIdentifier: TapList])>((0, [:]))

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
			let tap = Tap(id: taps.nextID, names: names, handler: handler)
			taps.byStore[storeID] = TapList((taps.byStore[storeID]?.taps ?? []) + [tap])
			return taps.nextID
		}
		count.add(1, ordering: .relaxed)
		return {
			let isRemoved = taps.withLock { taps in
				guard let list = taps.byStore[storeID], list.taps.contains(where: { $0.id == id }) else {
					return false
				}
				let remaining = list.taps.filter { $0.id != id }
				taps.byStore[storeID] = remaining.isEmpty ? nil : TapList(remaining)
				return true
			}
			if isRemoved {
				count.subtract(1, ordering: .relaxed)
			}
		}
	}

	/// Tells the taps of `store` that `key` was written.
	static func note(_ key: String, in store: some Defaults.Store) {
		guard let list = taps.withLock({ $0.byStore[ObjectIdentifier(store)] }) else {
			return
		}
		for tap in list.taps where tap.names.contains(key) {
			tap.handler(key)
		}
	}
}
