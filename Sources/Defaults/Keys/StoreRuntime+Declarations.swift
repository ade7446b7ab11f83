import Foundation

/// The keys declared in a store so far, so that a name declared twice with different types is reported.
///
/// Two such keys read each other's values (and each other's registered default) as data they cannot decode, and the
/// decoding failure would speak of a stored value although nothing was stored. Saying it at the declaration names
/// the real cause. Keys whose stored forms are of one kind may share a name: `Key<T>` and `Key<T?>`, `Key<Int>` and
/// `Key<Int8>` (both integers), `Key<String>` and a `String`-backed enum. The kind is that of the key's default in
/// stored form; a key with no default to store (an optional one) is compared by its type.
///
/// The declarations live in the store's runtime and end with it: a store made later at a freed store's address
/// starts with none.
struct KeyDeclaration: Sendable {
	let valueType: ObjectIdentifier
	let typeName: String
	/// The property-list kind of the default's stored form, when the key has a default to store.
	let storedKind: String?

	init(valueType: Any.Type, storedDefault: Any?) {
		let stored = StoredForm.unwrappingOptional(valueType)
		self.valueType = ObjectIdentifier(stored)
		self.typeName = String(describing: stored)
		self.storedKind = storedDefault.map(Defaults.PropertyList.typeName(of:))
	}

	func conflicts(with other: KeyDeclaration) -> Bool {
		if let storedKind, let otherKind = other.storedKind {
			return storedKind != otherKind
		}
		return valueType != other.valueType
	}
}

extension StoreRuntime {
	/// Records a key's declaration, and reports it (once per pair of types) when the name is already declared here
	/// with a type whose stored form differs.
	func declare(_ name: String, valueType: Any.Type, storedDefault: Any?) {
		let declaration = KeyDeclaration(valueType: valueType, storedDefault: storedDefault)
		let conflicting = declarations.withLock { state -> KeyDeclaration? in
			guard let first = state.byName[name] else {
				state.byName[name] = declaration
				return nil
			}
			guard first.conflicts(with: declaration) else {
				return nil
			}
			let pair = [first.typeName, declaration.typeName].sorted().joined(separator: "/")
			return state.reported.insert("\(name)/\(pair)").inserted ? first : nil
		}
		guard let conflicting else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: name, reason: .invalidKeyName,
				message:
					"The key name '\(name)' is declared twice in the same store, as \(conflicting.typeName) and as \(declaration.typeName). Both keys read and write one stored value, so each finds the other's value (or registered default) in a form it cannot decode. Give one of them another name."
			))
	}
}
