import Synchronization

/// Hears the names of keys written through `commit` in a store, for machinery beside the package (sync) that needs
/// to know that a key changed but not how: far cheaper per write than an observation, which reads the old value and
/// builds a change for each write.
///
/// While no tap exists, a write pays one relaxed atomic load for it. With taps, a write takes one lock to fetch its
/// store's table (an immutable object, rebuilt whenever a tap is added or removed), hashes its key name once to find
/// the handlers, and calls them with no lock held and nothing allocated.
enum CommitTaps {
	private final class Handler: Sendable {
		let call: @Sendable () -> Void

		init(_ call: @escaping @Sendable () -> Void) {
			self.call = call
		}
	}

	private struct Tap {
		let handlers: [String: Handler]
	}

	/// The handlers of one store by key name, in the order the taps were added. Never mutated.
	private final class StoreTable: Sendable {
		let handlers: [String: [Handler]]

		init(_ taps: [UInt64: Tap]) {
			var handlers: [String: [Handler]] = [:]
			for id in taps.keys.sorted() {
				for (name, handler) in taps[id]!.handlers {
					handlers[name, default: []].append(handler)
				}
			}
			self.handlers = handlers
		}
	}

	private struct Registry {
		var nextID: UInt64 = 0
		var byStore: [ObjectIdentifier: [UInt64: Tap]] = [:]
		var tables: [ObjectIdentifier: StoreTable] = [:]

		mutating func rebuild(_ storeID: ObjectIdentifier) {
			if let taps = byStore[storeID], !taps.isEmpty {
				tables[storeID] = StoreTable(taps)
			} else {
				byStore[storeID] = nil
				tables[storeID] = nil
			}
		}
	}

	private static let count = Atomic<Int>(0)
	private static let registry = LockedState(Registry())

	@inline(__always)
	static var isActive: Bool {
		count.load(ordering: .relaxed) != 0
	}

	/// Calls `handler` with the name of each key among `names` written in `store` through the package, on the
	/// writing thread, after the write; until the returned closure is called.
	static func add(
		names: Set<String>, in store: any Defaults.Store, handler: @escaping @Sendable (String) -> Void
	) -> @Sendable () -> Void {
		var handlers: [String: @Sendable () -> Void] = [:]
		for name in names {
			handlers[name] = { handler(name) }
		}
		return add(handlers: handlers, in: store)
	}

	/// Calls the handler of a key's name each time the key is written in `store` through the package, on the writing
	/// thread, after the write; until the returned closure is called. A handler per name spares the write a lookup
	/// of its own (sync bumps the key's change counter in it).
	static func add(
		handlers: [String: @Sendable () -> Void], in store: any Defaults.Store
	) -> @Sendable () -> Void {
		let storeID = ObjectIdentifier(store)
		let tap = Tap(handlers: handlers.mapValues(Handler.init))
		let id = registry.withLock { registry in
			registry.nextID += 1
			registry.byStore[storeID, default: [:]][registry.nextID] = tap
			registry.rebuild(storeID)
			return registry.nextID
		}
		count.add(1, ordering: .relaxed)
		return {
			let removed = registry.withLock { registry in
				defer { registry.rebuild(storeID) }
				return registry.byStore[storeID]?.removeValue(forKey: id)
			}
			if removed != nil {
				count.subtract(1, ordering: .relaxed)
			}
		}
	}

	/// How many handlers a write of `key` in `store` calls now.
	static func handlerCount(forKey key: String, in store: some Defaults.Store) -> Int {
		let storeID = ObjectIdentifier(store)
		return registry.withLock { $0.tables[storeID]?.handlers[key]?.count ?? 0 }
	}

	/// Tells the taps of `store` that `key` was written.
	static func note(_ key: String, in store: some Defaults.Store) {
		let storeID = ObjectIdentifier(store)
		guard let table = registry.withLock({ $0.tables[storeID] }), let handlers = table.handlers[key] else {
			return
		}
		for handler in handlers {
			handler.call()
		}
	}
}
