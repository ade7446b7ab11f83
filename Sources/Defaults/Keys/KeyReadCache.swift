import Synchronization

/// The value a key read last, with the change count of its store at that read: while the store's
/// ``Defaults/ChangeCounter`` still shows that count, the value is still what the store holds.
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
	/// Orders writers among themselves; readers never take it.
	private let writer = LockedState(())

	// For values with references: both guarded by `lock`, and kept beside it so that the inlined read reaches them directly.
	// Unchecked exclusivity: the lock already makes access exclusive, and the runtime's check costs a thread-local
	// lookup and two calls per access, on every read.
	@usableFromInline let lock = LockedState(())
	@exclusivity(unchecked) @usableFromInline var lockedCount: UInt64 = .max
	@exclusivity(unchecked) @usableFromInline var lockedValue: Value?

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

	/// Remembers `value`, read at change count `current`.
	@usableFromInline
	func remember(_ value: Value, at current: UInt64) {
		guard Self.isBitwise else {
			lock.withLock { _ in
				lockedCount = current
				lockedValue = value
			}
			return
		}
		var words: (UInt64, UInt64) = (0, 0)
		withUnsafeMutableBytes(of: &words) { $0.storeBytes(of: value, as: Value.self) }
		writer.withLock { _ in
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
}
