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
		set {
			let stored: Any?
			do {
				stored = try key.storedForm(of: newValue)
			} catch {
				Defaults.report(
					Defaults.Failure(
						keyName: key.name, reason: .encodingFailed,
						message: "Nothing was written for the key '\(key.name)'. \(error.description)"))
				return
			}
			commit(stored, forKey: key.name)
		}
	}
}
