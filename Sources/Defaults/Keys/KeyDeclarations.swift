import Foundation
import Synchronization

/// The keys declared so far, by name and store, so that a name declared twice with different types is reported.
///
/// Two such keys read each other's values (and each other's registered default) as data they cannot decode, and the
/// decoding failure would speak of a stored value although nothing was stored. Saying it at the declaration names
/// the real cause. `Key<T>` and `Key<T?>` store the same form, so they may share a name.
enum KeyDeclarations {
	// Holds its store weakly, so that a store that is gone (and whose address may be reused) is never matched.
	private struct Declaration: @unchecked Sendable {
		weak var store: AnyObject?
		let valueType: ObjectIdentifier
		let typeName: String
	}

	private static let declarations = LockedState<[String: [Declaration]]>([:])
	private static let reported = LockedState<Set<String>>([])

	static func record(name: String, store: any Defaults.Store, valueType: Any.Type) {
		let stored = StoredForm.unwrappingOptional(valueType)
		let declaration = Declaration(
			store: store, valueType: ObjectIdentifier(stored), typeName: String(describing: stored))
		let storeIdentifier = ObjectIdentifier(store)
		let otherTypeName = declarations.withLock { declarations -> String? in
			var entries = declarations[name, default: []].filter { $0.store != nil }
			defer { declarations[name] = entries }
			let sameStore = entries.filter { $0.store.map(ObjectIdentifier.init) == storeIdentifier }
			if let other = sameStore.first(where: { $0.valueType != declaration.valueType }) {
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
