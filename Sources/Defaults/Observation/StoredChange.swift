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

	init(store: any Defaults.Store, name: String, oldValue: Any?, newValue: Any?, isPrior: Bool) {
		self.store = store
		self.name = name
		self.oldValue = oldValue
		self.newValue = newValue
		self.isPrior = isPrior
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
