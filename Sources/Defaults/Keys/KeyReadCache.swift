import Foundation
import Synchronization

/// A key's one cache: the value it read last, the stored form it decoded that value from, and its store's change count
/// at that read. While the store's runtime still shows that count, the value is still what the store holds (one
/// atomic load answers the read); once the count moved, a stored form equal to the remembered one still spares the
/// decoding (another key's write moves the count too).
///
/// Readers on many threads must get the value without a lock (a lock writes its cache line and makes two threads
/// slower than one) and never see half of one value and half of another. Values of at most 64 bytes that may be moved
/// by copying their bits (`Int`, `Bool`, `Double`, their optionals, `String`, most structs of such fields) go through a
/// sequence lock over atomic words. The writer makes the sequence odd, stores the words, and makes it even again; a
/// reader loads the sequence, the words and the sequence again, and keeps the words only if the sequence was even
/// and did not move. Every access is an atomic, so there is no data race for the thread sanitizer to find, and
/// readers only load, so they scale across cores.
///
/// A value holding references is copied out of the words, which retains what they point to: that is safe only if
/// nothing the words ever pointed to has been freed, since a reader may have loaded the words just before a writer
/// replaced them and retain after it. So the cache keeps every such value it published (`published`) for its own
/// lifetime, and after ``publishedLimit`` of them it stops publishing: the key's later values are read under its
/// lock (a lock's two atomic operations, still no store lock, hashing or decoding). A value whose stored form did not
/// change is published again without being kept twice, so writes of other keys, which move the count, cost nothing
/// here. Plain bits (`_isPOD`) point to nothing and are never kept. Larger values, and values that cannot be moved
/// bit for bit, are always read under the lock.
@usableFromInline
final class KeyReadCache<Value>: @unchecked Sendable {
	/// Plain bits: no reference to keep alive.
	@usableFromInline static var isBitwise: Bool {
		_isPOD(Value.self) && fitsTheWords
	}

	/// Read through the sequence lock: a value that may be moved by copying its bits, within the eight words.
	@usableFromInline static var usesSequenceLock: Bool {
		_isBitwiseTakable(Value.self) && fitsTheWords
	}

	@usableFromInline static var fitsTheWords: Bool {
		MemoryLayout<Value>.size <= 64 && MemoryLayout<Value>.alignment <= 8
	}

	/// How many values holding references the cache publishes (and keeps) before it reads under its lock only.
	static var publishedLimit: Int { 8 }

	/// The largest text or data, in bytes, whose value the cache keeps for readers: a key of large values (an image's
	/// `Data`, a long JSON text) must not keep eight of them alive for the key's lifetime, so such values are read
	/// under the lock.
	static var keptStoredFormLimit: Int { 1_024 }

	/// Whether a value decoded from `storedForm` is known to be small enough to keep: a number, a date, a Boolean, or
	/// a text or data within ``keptStoredFormLimit``; a value with no stored form is the key's default. A collection's
	/// size is not looked at on a write, so collections are not kept.
	static func isSmallEnoughToKeep(_ storedForm: Any?) -> Bool {
		switch storedForm {
		case nil, is Int, is Double, is Bool, is Date: true
		case let text as String: text.utf8.count <= keptStoredFormLimit
		case let data as Data: data.count <= keptStoredFormLimit
		default: false
		}
	}

	// Sequence-lock state. `count` is the store's change count the words belong to; `UInt64.max` means nothing is
	// remembered (a counter never gets there).
	@usableFromInline let sequence = Atomic<UInt64>(0)
	@usableFromInline let count = Atomic<UInt64>(.max)
	@usableFromInline let word0 = Atomic<UInt64>(0)
	@usableFromInline let word1 = Atomic<UInt64>(0)
	@usableFromInline let word2 = Atomic<UInt64>(0)
	@usableFromInline let word3 = Atomic<UInt64>(0)
	@usableFromInline let word4 = Atomic<UInt64>(0)
	@usableFromInline let word5 = Atomic<UInt64>(0)
	@usableFromInline let word6 = Atomic<UInt64>(0)
	@usableFromInline let word7 = Atomic<UInt64>(0)
	// Guarded by `lock`, which also orders the writers of the sequence lock (its readers never take it): the count,
	// value and stored form, read by the fast path for values with references and by every slower read. Kept beside
	// the lock so that the inlined read reaches them directly. Unchecked exclusivity: the lock already makes access
	// exclusive, and the runtime's check costs a thread-local lookup and two calls per access, on every read.
	@usableFromInline let lock = LockedState(())
	@exclusivity(unchecked) @usableFromInline var lockedCount: UInt64 = .max
	@exclusivity(unchecked) @usableFromInline var lockedValue: Value?
	/// The stored form `lockedValue` was decoded from; `nil` for a default or a value remembered without one.
	@exclusivity(unchecked) var lockedStoredForm: Any?
	/// Every value holding references that the words ever held, kept so that what they point to outlives any reader.
	@exclusivity(unchecked) var published: [Value] = []
	/// Whether `lockedValue` may be published: plain bits, or kept in `published`.
	@exclusivity(unchecked) var isLockedValueKept = false

	@usableFromInline init() {}

	/// The remembered value if it was read at change count `current`.
	@inlinable
	func value(at current: UInt64) -> Value? {
		if Self.usesSequenceLock, let value = publishedValue(at: current) {
			return value
		}
		guard !Self.isBitwise else {
			return nil
		}
		return lock.withLock { _ in
			lockedCount == current ? lockedValue : nil
		}
	}

	/// The value in the sequence lock's words, if they hold one read at `current` and no writer is changing them.
	@inlinable
	func publishedValue(at current: UInt64) -> Value? {
		let before = sequence.load(ordering: .acquiring)
		guard before & 1 == 0, count.load(ordering: .relaxed) == current else {
			return nil
		}
		// Only the words the value takes: the size is known where the read is specialised.
		let size = MemoryLayout<Value>.size
		var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
			word0.load(ordering: .relaxed), size > 8 ? word1.load(ordering: .relaxed) : 0,
			size > 16 ? word2.load(ordering: .relaxed) : 0, size > 24 ? word3.load(ordering: .relaxed) : 0,
			size > 32 ? word4.load(ordering: .relaxed) : 0, size > 40 ? word5.load(ordering: .relaxed) : 0,
			size > 48 ? word6.load(ordering: .relaxed) : 0, size > 56 ? word7.load(ordering: .relaxed) : 0
		)
		// The loads above happen before the sequence is checked again.
		atomicMemoryFence(ordering: .acquiring)
		guard sequence.load(ordering: .relaxed) == before else {
			return nil
		}
		// A copy: for a value with references, this retains them, which is safe since `published` keeps them.
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
			publish(value, at: current ?? .max, isNew: true)
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
				publish(lockedValue, at: current, isNew: false)
			}
			return lockedValue
		}
	}

	/// Stores `value` in the sequence lock's words; called with `lock` held, which orders the writers. `isNew` is
	/// false when `value` is `lockedValue` again, kept or not when it was new.
	private func publish(_ value: Value, at current: UInt64, isNew: Bool) {
		guard Self.usesSequenceLock else {
			return
		}
		if isNew {
			if Self.isBitwise {
				isLockedValueKept = true
			} else if published.count < Self.publishedLimit, Self.isSmallEnoughToKeep(lockedStoredForm) {
				published.append(value)
				isLockedValueKept = true
			} else {
				isLockedValueKept = false
			}
		}
		let isPublished = isLockedValueKept
		var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
		if isPublished {
			// The bits only: `published` (or, for plain bits, nothing) owns what they point to.
			withUnsafeBytes(of: value) { source in
				withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: source) }
			}
		}
		let start = sequence.load(ordering: .relaxed)
		sequence.store(start &+ 1, ordering: .relaxed)
		// The words below are stored after readers can see the odd sequence.
		atomicMemoryFence(ordering: .releasing)
		count.store(isPublished ? current : .max, ordering: .relaxed)
		word0.store(words.0, ordering: .relaxed)
		word1.store(words.1, ordering: .relaxed)
		word2.store(words.2, ordering: .relaxed)
		word3.store(words.3, ordering: .relaxed)
		word4.store(words.4, ordering: .relaxed)
		word5.store(words.5, ordering: .relaxed)
		word6.store(words.6, ordering: .relaxed)
		word7.store(words.7, ordering: .relaxed)
		sequence.store(start &+ 2, ordering: .releasing)
	}
}
