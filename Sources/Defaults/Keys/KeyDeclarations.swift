import Foundation
import Synchronization

/// The keys declared so far, by name and store, so that a name declared twice with different types is reported.
///
/// Two such keys read each other's values (and each other's registered default) as data they cannot decode, and the
/// decoding failure would speak of a stored value although nothing was stored. Saying it at the declaration names
/// the real cause. Keys whose stored forms are of one kind may share a name: `Key<T>` and `Key<T?>`, `Key<Int>` and
/// `Key<Int8>` (both integers), `Key<String>` and a `String`-backed enum. The kind is that of the key's default in
/// stored form; a key with no default to store (an optional one) is compared by its type.
enum KeyDeclarations {
	// Holds its store weakly, so that a store that is gone (and whose address may be reused) is never matched.
	private struct Declaration: @unchecked Sendable {
		weak var store: AnyObject?
		let valueType: ObjectIdentifier
		let typeName: String
		/// The property-list kind of the default's stored form, when the key has a default to store.
		let storedKind: String?

		func conflicts(with other: Declaration) -> Bool {
			if let storedKind, let otherKind = other.storedKind {
				return storedKind != otherKind
			}
			return valueType != other.valueType
		}
	}

	private static let declarations = LockedState<[String: [Declaration]]>([:])
	private static let reported = LockedState<Set<String>>([])

	static func record(name: String, store: any Defaults.Store, valueType: Any.Type, storedDefault: Any?) {
		let stored = StoredForm.unwrappingOptional(valueType)
		let declaration = Declaration(
			store: store, valueType: ObjectIdentifier(stored), typeName: String(describing: stored),
			storedKind: storedDefault.map(Defaults.PropertyList.typeName(of:)))
		let storeIdentifier = ObjectIdentifier(store)
		let otherTypeName = declarations.withLock { declarations -> String? in
			var entries = declarations[name, default: []].filter { $0.store != nil }
			defer { declarations[name] = entries }
			let sameStore = entries.filter { $0.store.map(ObjectIdentifier.init) == storeIdentifier }
			if let other = sameStore.first(where: { $0.conflicts(with: declaration) }) {
				return other.typeName
			}
			if sameStore.isEmpty {
				entries.append(declaration)
			}
			return nil
		}
		guard let otherTypeName else {
			return
		}
		let pair = [otherTypeName, declaration.typeName].sorted().joined(separator: "/")
		guard reported.withLock({ $0.insert("\(name)/\(pair)/\(storeIdentifier)").inserted }) else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: name, reason: .invalidKeyName,
				message:
					"The key name '\(name)' is declared twice in the same store, as \(otherTypeName) and as \(declaration.typeName). Both keys read and write one stored value, so each finds the other's value (or registered default) in a form it cannot decode. Give one of them another name."
			))
	}
}
