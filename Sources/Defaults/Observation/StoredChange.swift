import Foundation

/// One change of one key in one store, in stored (property-list) form: each subscriber decodes it with its own key's
/// type, so nothing is decoded unless someone listens.
///
/// A class, made once per change: handing it to each observer copies one reference, and it carries the memo that
/// lets observers of one key share one decoding. Its inlinable parts let `observe` be specialised in the caller, so
/// that an observer's share of a change costs no generic-metadata lookup.
@usableFromInline
final class StoredChange {
	/// The store the key lives in.
	let store: any Defaults.Store
	/// The key's name.
	let name: String
	/// The stored form before the change; `nil` when nothing was stored.
	@usableFromInline let oldValue: Any?
	/// The stored form after the change (for a prior notification: the one about to be written); `nil` when nothing
	/// is stored.
	@usableFromInline let newValue: Any?
	/// Whether this is the notification sent before the change is made.
	@usableFromInline let isPrior: Bool
	/// What lies beneath the values when either is the text of a launch argument or environment variable, which a key
	/// that cannot read the text skips; `nil` otherwise (and always for stores without layers).
	@usableFromInline let beneathOverrides: BeneathOverrides?

	/// The value beneath an override in text, before and after, and which of the two values are such text.
	@usableFromInline
	struct BeneathOverrides {
		@usableFromInline let isOldOverrideText: Bool
		@usableFromInline let old: Any?
		@usableFromInline let isNewOverrideText: Bool
		@usableFromInline let new: Any?
		/// Whether the change is a write of this process, which leaves launch arguments and variables as they are:
		/// its observers hear it whether it changes the value or not, unless the key reads the text above it.
		let isWrite: Bool
	}

	// The memo of decoded values: the last one here, earlier ones (observers of several key objects or result types
	// of one change) in `earlier`. A change is delivered on one thread, one observer after the other, so the memo
	// needs no lock.
	// Unchecked exclusivity: checking it costs a thread-local lookup per access, once per observer, and the memo is
	// only touched on the delivering thread, through these two methods.
	@exclusivity(unchecked) @usableFromInline var lastKey: ObjectIdentifier?
	@exclusivity(unchecked) @usableFromInline var lastResultType: ObjectIdentifier?
	@exclusivity(unchecked) @usableFromInline var last: AnyObject?
	private var earlier: [DecodingID: AnyObject] = [:]

	private struct DecodingID: Hashable {
		let key: ObjectIdentifier
		let result: ObjectIdentifier
	}

	init(
		store: any Defaults.Store, name: String, old: ObservedForm, new: ObservedForm, isPrior: Bool,
		isWrite: Bool = false
	) {
		self.store = store
		self.name = name
		self.oldValue = old.value
		self.newValue = new.value
		self.isPrior = isPrior
		beneathOverrides =
			old.isOverrideText || new.isOverrideText
			? BeneathOverrides(
				isOldOverrideText: old.isOverrideText, old: old.beneath, isNewOverrideText: new.isOverrideText,
				new: new.beneath, isWrite: isWrite) : nil
	}

	/// `decode()`, or what it returned for an earlier observer with the same `key` object.
	///
	/// Observers of one key ask one after the other, so the last result answers them with two comparisons: no
	/// hashing and no cast from `Any`.
	@inlinable
	func decoded<Result>(for key: Defaults.Keys, _ decode: () -> Result) -> Result {
		let keyID = ObjectIdentifier(key)
		let resultType = ObjectIdentifier(Result.self)
		if lastKey == keyID, lastResultType == resultType, let last {
			// The identifiers name `Result`, so the box under them is a `Decoded<Result>`.
			return unsafeDowncast(last, to: Decoded<Result>.self).value
		}
		return decodedOnce(keyID: keyID, resultType: resultType, decode)
	}

	@usableFromInline
	func decodedOnce<Result>(keyID: ObjectIdentifier, resultType: ObjectIdentifier, _ decode: () -> Result) -> Result {
		let id = DecodingID(key: keyID, result: resultType)
		if let box = earlier[id] {
			return unsafeDowncast(box, to: Decoded<Result>.self).value
		}
		if let lastKey, let lastResultType, let last {
			earlier[DecodingID(key: lastKey, result: lastResultType)] = last
		}
		let result = decode()
		lastKey = keyID
		lastResultType = resultType
		last = Decoded(result)
		return result
	}
}

/// A decoded value of a change, boxed so that the memo holds values of any type without casting from `Any`.
@usableFromInline
final class Decoded<Value> {
	@usableFromInline let value: Value

	init(_ value: Value) {
		self.value = value
	}
}
