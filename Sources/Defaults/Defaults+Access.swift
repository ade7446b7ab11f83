import Foundation
import Synchronization

extension Defaults.Store {
	/// Reads or writes the value of `key` in this store, whatever store the key names.
	///
	/// ```swift
	/// let isUnicorn = Defaults.Key<Bool>("isUnicorn", default: true)
	/// UserDefaults.standard[isUnicorn] = false
	/// ```
	public subscript<Value: Defaults.Serializable>(key: Defaults.Key<Value>) -> Value {
		get {
			guard let stored = storedValue(forKey: key.name) else {
				return key.defaultValue
			}
			if let value = Value.value(fromStoredForm: stored) {
				return value
			}
			DecodingFailures.report(key: key.name, type: Value.self, stored: stored, in: self)
			return key.defaultValue
		}
		set {
			let stored: Any?
			do {
				stored = try Value.storedForm(of: newValue)
			} catch {
				Defaults.report(
					Defaults.Failure(
						keyName: key.name, reason: .encodingFailed,
						message: "Nothing was written for the key '\(key.name)'. \(error.description)"))
				return
			}
			DecodingFailures.forget(key: key.name, in: self)
			commit(stored, forKey: key.name)
		}
	}
}

/// Reports each key whose stored value does not decode once, until the key is written again.
enum DecodingFailures {
	private struct ID: Hashable {
		let store: ObjectIdentifier
		let key: String
	}

	private static let reported = Mutex<Set<ID>>([])

	static func report(key: String, type: Any.Type, stored: Any, in store: any Defaults.Store) {
		let isNew = reported.withLock { $0.insert(ID(store: ObjectIdentifier(store), key: key)).inserted }
		guard isNew else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: key, reason: .decodingFailed,
				message:
					"The value stored for the key '\(key)' does not decode as \(type) (stored: \(Swift.type(of: stored)) \(String(describing: stored).prefix(200))). The key reads as its default; the stored value is left as it is."
			))
	}

	static func forget(key: String, in store: any Defaults.Store) {
		_ = reported.withLock { $0.remove(ID(store: ObjectIdentifier(store), key: key)) }
	}
}
