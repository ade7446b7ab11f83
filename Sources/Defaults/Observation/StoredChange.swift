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
	/// A change is delivered on one thread, one observer after the other, so the memo needs no lock. Observers of one
	/// key ask one after the other, so the last result answers them with one comparison, no hashing and no cast from
	/// `Any`.
	func decoded<Result>(for key: Defaults.Keys, _ decode: () -> Result) -> Result {
		let id = Decodings.ID(key: ObjectIdentifier(key), result: ObjectIdentifier(Result.self))
		if let box = decodings.box(for: id) {
			// The identifier names `Result`, so the box under it is a `Decoded<Result>`.
			return unsafeDowncast(box, to: Decoded<Result>.self).value
		}
		let result = decode()
		decodings.insert(Decoded(result), for: id)
		return result
	}

	private final class Decoded<Value> {
		let value: Value

		init(_ value: Value) {
			self.value = value
		}
	}

	private final class Decodings {
		struct ID: Hashable {
			let key: ObjectIdentifier
			let result: ObjectIdentifier
		}

		private var lastID: ID?
		private var last: AnyObject?
		/// Results before the last one, for observers of several key objects or result types of one change.
		private var earlier: [ID: AnyObject] = [:]

		@inline(__always)
		func box(for id: ID) -> AnyObject? {
			if id == lastID {
				return last
			}
			return earlier[id]
		}

		func insert(_ box: AnyObject, for id: ID) {
			if let lastID, let last {
				earlier[lastID] = last
			}
			lastID = id
			last = box
		}
	}
}
