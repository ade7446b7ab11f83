extension Defaults {
	/// The keys of one atomic update over several keys, read and written inside its closure.
	///
	/// Reading a key gives its latest value (other processes' writes to a file store included); writing it records the
	/// new value, which is stored when the closure returns, together with the other keys' new values, and observers
	/// hear one change per key written. Only the keys named in the update can be read or written here.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let credits = Key<Int>("credits", default: 10)
	/// 	static let purchases = Key<[String]>("purchases", default: [])
	/// }
	///
	/// try Defaults.update([.credits, .purchases]) { transaction in
	/// 	guard transaction[.credits] >= 3 else {
	/// 		return
	/// 	}
	/// 	transaction[.credits] -= 3
	/// 	transaction[.purchases].append("hat")
	/// }
	/// ```
	public struct Transaction {
		let store: any Store
		private let names: Set<String>
		/// The stored forms the keys are read from, by key name, when they are not the store's: the remote's, for an
		/// update of synced keys (a name missing: nothing stored).
		private let storedForms: [String: Any]?
		/// The values written so far, by key name.
		private var written: [String: Any] = [:]
		/// The stored forms of the written values, in the order the keys were first written.
		private(set) var changes: [StoredChangeOfUpdate] = []
		/// The first value that had no stored form, or the first stored value that did not decode: the update throws
		/// it once the closure returns, and stores nothing.
		private(set) var failure: UpdateError?

		init(store: any Store, names: Set<String>, storedForms: [String: Any]? = nil) {
			self.store = store
			self.names = names
			self.storedForms = storedForms
		}

		/// The value of `key`: its latest value, or what this transaction wrote to it.
		///
		/// `key` must be one of the keys the update names; any other key stops the program, as an index out of range
		/// does.
		public subscript<Value: Serializable>(key: Key<Value>) -> Value {
			mutating get {
				check(key)
				if let value = written[key.name] {
					// Only this subscript writes here, with a value of this key's type.
					return value as! Value
				}
				return read(key)
			}
			set {
				check(key)
				let stored: Any?
				do {
					stored = try key.storedForm(of: newValue)
				} catch {
					if failure == nil {
						failure = UpdateError(
							.encodingFailed,
							"Nothing was updated: the new value of the key '\(key.name)' has no stored form. "
								+ error.description)
					}
					return
				}
				written[key.name] = newValue
				if let index = changes.firstIndex(where: { $0.key == key.name }) {
					changes[index].value = stored
				} else {
					changes.append((key.name, stored))
				}
			}
		}

		/// The latest value of `key`. A stored value that does not decode reads as the default, as everywhere, but
		/// fails the update: storing a value computed from the default would replace data that a newer version of
		/// the app (or a fixed bridge) could still read.
		private mutating func read<Value: Serializable>(_ key: Key<Value>) -> Value {
			guard let stored = storedForms.map({ $0[key.name] }) ?? store.valueBeneathOverrides(forKey: key.name) else {
				return key.defaultValue
			}
			if key.readsByCast, let value = stored as? Value {
				return value
			}
			switch key.decode(stored) {
			case .current(let value), .olderForm(let value, _):
				return value
			case .undecodable(let error):
				if failure == nil {
					failure = UpdateError(
						.undecodableValue,
						"Nothing was updated: the stored value of the key '\(key.name)' does not decode, and is left as "
							+ "it is rather than replaced by a value computed from the default. \(error.description) "
							+ "Reset the key or write a value to it to replace it.")
				}
				return key.defaultValue
			case .absent:
				return key.defaultValue
			}
		}

		private func check(_ key: Keys) {
			precondition(
				names.contains(key.name) && key.suite === store,
				"The key '\(key.name)' is not one of the keys this update names (\(names.sorted())); name it in the "
					+ "call to Defaults.update.")
		}
	}
}
