import Foundation

/// One change of one key in one store, in stored (property-list) form: each subscriber decodes it with its own key's
/// type, so nothing is decoded unless someone listens.
struct StoredChange {
	/// The store the key lives in.
	let store: any Defaults.Store
	/// The key's name.
	let name: String
	/// The stored form before the change; `nil` when nothing was stored.
	let oldValue: Any?
	/// The stored form after the change (for a prior notification: the one about to be written); `nil` when nothing
	/// is stored.
	let newValue: Any?
	/// Whether this is the notification sent before the change is made.
	let isPrior: Bool
	/// Values decoded for this change, per key object: observers of one key share one decoding.
	private let decodings = Decodings()

	init(store: any Defaults.Store, name: String, oldValue: Any?, newValue: Any?, isPrior: Bool) {
		self.store = store
		self.name = name
		self.oldValue = oldValue
		self.newValue = newValue
		self.isPrior = isPrior
	}

	/// `decode()`, or what it returned for an earlier observer with the same `key` object.
	///
	/// A change is delivered on one thread, one observer after the other, so the memo needs no lock.
	func decoded<Result>(for key: Defaults.Keys, _ decode: () -> Result) -> Result {
		let id = Decodings.ID(key: ObjectIdentifier(key), result: ObjectIdentifier(Result.self))
		// Unwrapped before the cast: a missing entry cast to an optional `Result` would succeed as `nil`.
		if let cached = decodings.results[id], let result = cached as? Result {
			return result
		}
		let result = decode()
		decodings.results[id] = result
		return result
	}

	private final class Decodings {
		struct ID: Hashable {
			let key: ObjectIdentifier
			let result: ObjectIdentifier
		}

		var results: [ID: Any] = [:]
	}
}
