import Foundation

extension Defaults.Store {
	/// Reads or writes the value of `key` in this store, whatever store the key names.
	///
	/// ```swift
	/// let isUnicorn = Defaults.Key<Bool>("isUnicorn", default: true)
	/// UserDefaults.standard[isUnicorn] = false
	/// ```
	public subscript<Value: Defaults.Serializable>(key: Defaults.Key<Value>) -> Value {
		@inlinable get {
			key.value(in: self)
		}
		@inlinable set {
			// Inlinable so that a value that is its own stored form reaches the store specialised, boxed in place.
			if key.storesAsIs {
				commit(storedForm: newValue, through: key)
			} else {
				write(newValue, through: key)
			}
		}
	}

	/// Writes `stored`, already the stored form, for `key`: through the key's runtime when this is the key's store.
	/// In a scope that stands another store in for this one, the stand-in is written.
	@usableFromInline
	func commit(storedForm stored: Any?, through key: Defaults.Keys) {
		let store = Defaults.resolved(self)
		if key.suite === store {
			key.commit(storedForm: stored)
		} else {
			store.commit(stored, forKey: key.name)
		}
	}

	/// Writes `value` in the stored form `key`'s bridge gives it; reports a value that has none.
	@usableFromInline
	func write<Value: Defaults.Serializable>(_ value: Value, through key: Defaults.Key<Value>) {
		let stored: Any?
		do {
			stored = try key.storedForm(of: value)
		} catch {
			Defaults.report(
				Defaults.Failure(
					keyName: key.name, reason: .encodingFailed,
					message: "Nothing was written for the key '\(key.name)'. \(error.description)"))
			return
		}
		commit(storedForm: stored, through: key)
	}
}
