import Synchronization

/// A key's one cache: the value it read last, the stored form it decoded that value from, and its store's change count
/// at that read. While the store's runtime still shows that count, the value is still what the store holds (one
/// atomic load answers the read); once the count moved, a stored form equal to the remembered one still spares the
/// decoding (another key's write moves the count too).
///
/// Readers on many threads must get the value without a lock (a lock writes its cache line and makes two threads
/// slower than one) and never see half of one value and half of another. How depends on the value:
/// - Plain bits of at most 16 bytes (`Int`, `Bool`, `Double`, their optionals, small enums and structs of those):
///   a sequence lock over atomic words. The writer makes the sequence odd, stores the words, and makes it even
///   again; a reader loads the sequence, the words and the sequence again, and keeps the words only if the sequence
///   was even and did not move. Every access is an atomic, so there is no data race for the thread sanitizer to
///   find, and readers only load, so they scale across cores.
/// - Anything holding references (`String`, arrays, most structs): a lock. A sequence lock cannot serve them: a
///   torn copy of a reference is retained before it can be checked, and a box swapped atomically needs a way to
///   know that no reader still holds the old box before releasing it, which the standard library does not offer.
///   Such a read still skips the store's lock, the hashing of the key and the decoding.
@usableFromInline
final class KeyReadCache<Value>: @unchecked Sendable {
	@usableFromInline static var isBitwise: Bool {
		_isPOD(Value.self) && MemoryLayout<Value>.size <= 16 && MemoryLayout<Value>.alignment <= 8
	}

	// Sequence-lock state, for bitwise values. `count` is the store's change count the words belong to;
	// `UInt64.max` means nothing is remembered (a counter never gets there).
	@usableFromInline let sequence = Atomic<UInt64>(0)
	@usableFromInline let count = Atomic<UInt64>(.max)
	@usableFromInline let word0 = Atomic<UInt64>(0)
	@usableFromInline let word1 = Atomic<UInt64>(0)
	// Guarded by `lock`, which also orders the writers of the sequence lock (its readers never take it): the count,
	// value and stored form, read by the fast path for values with references and by every slower read. Kept beside
	// the lock so that the inlined read reaches them directly. Unchecked exclusivity: the lock already makes access
	// exclusive, and the runtime's check costs a thread-local lookup and two calls per access, on every read.
	@usableFromInline let lock = LockedState(())
	@exclusivity(unchecked) @usableFromInline var lockedCount: UInt64 = .max
	@exclusivity(unchecked) @usableFromInline var lockedValue: Value?
	/// The stored form `lockedValue` was decoded from; `nil` for a default or a value remembered without one.
	@exclusivity(unchecked) var lockedStoredForm: Any?

	@usableFromInline init() {}

	/// The remembered value if it was read at change count `current`.
	@inlinable
	func value(at current: UInt64) -> Value? {
		guard Self.isBitwise else {
			return lock.withLock { _ in
				lockedCount == current ? lockedValue : nil
			}
		}
		let before = sequence.load(ordering: .acquiring)
		guard before & 1 == 0, count.load(ordering: .relaxed) == current else {
			return nil
		}
		var words = (word0.load(ordering: .relaxed), word1.load(ordering: .relaxed))
		// The loads above happen before the sequence is checked again.
		atomicMemoryFence(ordering: .acquiring)
		guard sequence.load(ordering: .relaxed) == before else {
			return nil
		}
		return withUnsafeBytes(of: &words) { $0.load(as: Value.self) }
	}

	/// Remembers `value`, read at change count `current` (`nil` for a store without a count: then only the stored
	/// form can match again), decoded from `storedForm` (`nil` when it is not decoded from one).
	@usableFromInline
	func remember(_ value: Value, storedForm: Any? = nil, at current: UInt64?) {
		lock.withLock { _ in
			lockedCount = current ?? .max
			lockedValue = value
			lockedStoredForm = storedForm
			publish(value, at: current ?? .max)
		}
	}

	/// The remembered value if it was decoded from a stored form equal to `stored`, now remembered at `current` too, so
	/// that the next read at that count is answered without comparing.
	func value(decodedFrom stored: Any, at current: UInt64?) -> Value? {
		lock.withLock { _ in
			guard let lockedStoredForm, let lockedValue, Defaults.PropertyList.isEqual(lockedStoredForm, stored) else {
				return nil
			}
			if let current {
				lockedCount = current
				publish(lockedValue, at: current)
			}
			return lockedValue
		}
	}

	/// Stores `value` in the sequence lock's words; called with `lock` held, which orders the writers.
	private func publish(_ value: Value, at current: UInt64) {
		guard Self.isBitwise else {
			return
		}
		var words: (UInt64, UInt64) = (0, 0)
		withUnsafeMutableBytes(of: &words) { $0.storeBytes(of: value, as: Value.self) }
		let start = sequence.load(ordering: .relaxed)
		sequence.store(start &+ 1, ordering: .relaxed)
		// The words below are stored after readers can see the odd sequence.
		atomicMemoryFence(ordering: .releasing)
		count.store(current, ordering: .relaxed)
		word0.store(words.0, ordering: .relaxed)
		word1.store(words.1, ordering: .relaxed)
		sequence.store(start &+ 2, ordering: .releasing)
	}
}
