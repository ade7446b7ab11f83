import Synchronization

/// The synced keys changed locally and not yet pushed.
///
/// Each name has a counter of its changes and the count its last push covered; it is pending while they differ, so a
/// push forgets a name only if no change came in while it was being pushed. A write bumps its key's counter with one
/// atomic add, handed to it directly by the commit tap: no lock that the pushing task also takes, no hashing of the
/// name.
final class LocalChanges: Sendable {
	final class Counter: Sendable {
		let name: String
		private let changes = Atomic<Int>(0)
		private let pushed = Atomic<Int>(0)
		/// The change number of the last change heard by name (from another process, or a key newly synced) rather
		/// than through a commit tap: while it is the latest change, the local value was not written through the
		/// package here, and a removal among those may be a lost settings file rather than a wish. Kept on this rare
		/// path so that a write through the package costs one atomic add, as before.
		private let lastHeardByName = Atomic<Int>(0)

		init(name: String) {
			self.name = name
		}

		/// Counts a change; called after the value is in the store.
		@inline(__always)
		func bump() {
			changes.add(1, ordering: .releasing)
		}

		/// Counts a change heard by name, not through a commit tap.
		func bumpHeardByName() {
			// `Int.max` first: a reader in between takes the change as not written here, the safe side.
			lastHeardByName.store(.max, ordering: .sequentiallyConsistent)
			let generation = changes.wrappingAdd(1, ordering: .releasing).newValue
			lastHeardByName.store(generation, ordering: .sequentiallyConsistent)
		}

		/// Whether the latest change was written through the package in this process (a commit tap counted it).
		var isWrittenHere: Bool {
			changes.load(ordering: .acquiring) > lastHeardByName.load(ordering: .sequentiallyConsistent)
		}

		/// The changes counted so far, when some are not yet pushed.
		var pendingGeneration: Int? {
			let current = changes.load(ordering: .acquiring)
			return current > pushed.load(ordering: .relaxed) ? current : nil
		}

		/// Marks the changes up to `generation` as pushed (never moving back, whoever pushes concurrently).
		func forget(upTo generation: Int) {
			var seen = pushed.load(ordering: .relaxed)
			while seen < generation {
				let (exchanged, original) = pushed.compareExchange(
					expected: seen, desired: generation, ordering: .relaxed)
				if exchanged {
					return
				}
				seen = original
			}
		}

		/// Marks every change counted so far as pushed.
		func forgetAll() {
			forget(upTo: changes.load(ordering: .acquiring))
		}
	}

	private let counters = Mutex<[String: Counter]>([:])

	/// The counter of `name`, made on first use.
	func counter(for name: String) -> Counter {
		counters.withLock { counters in
			if let counter = counters[name] {
				return counter
			}
			let counter = Counter(name: name)
			counters[name] = counter
			return counter
		}
	}

	/// Counts a change of `name` (a change heard by name: from another process, or a key newly synced).
	func note(_ name: String) {
		counter(for: name).bumpHeardByName()
	}

	/// Every pending name with the changes counted for it now.
	func pending() -> [String: Int] {
		var pending: [String: Int] = [:]
		for counter in counters.withLock({ Array($0.values) }) {
			if let generation = counter.pendingGeneration {
				pending[counter.name] = generation
			}
		}
		return pending
	}

	/// Forgets `name` if no change came in after its change number `generation`; `nil` forgets it whatever came.
	///
	/// - Returns: whether `name` is no longer pending.
	@discardableResult
	func forget(_ name: String, upTo generation: Int?) -> Bool {
		guard let counter = counters.withLock({ $0[name] }) else {
			return true
		}
		if let generation {
			counter.forget(upTo: generation)
		} else {
			counter.forgetAll()
		}
		return counter.pendingGeneration == nil
	}

	/// Every pending name with the changes counted for it now, and whether one was written through the package here.
	func pendingChanges() -> [String: (generation: Int, isWrittenHere: Bool)] {
		var pending: [String: (generation: Int, isWrittenHere: Bool)] = [:]
		for counter in counters.withLock({ Array($0.values) }) {
			if let generation = counter.pendingGeneration {
				pending[counter.name] = (generation, counter.isWrittenHere)
			}
		}
		return pending
	}

	/// How many names are pending.
	var pendingCount: Int {
		counters.withLock { Array($0.values) }.count { $0.pendingGeneration != nil }
	}
}
