import Foundation

extension Defaults.Keys: Equatable {
	/// Whether both keys name the same value: the same name in the same store, as in the well-known Defaults
	/// package.
	public static func == (lhs: Defaults.Keys, rhs: Defaults.Keys) -> Bool {
		lhs.name == rhs.name && lhs.declaredSuite === rhs.declaredSuite
	}
}

extension Defaults.Keys: Hashable {
	/// Hashes the name and the store, consistently with `==`.
	public func hash(into hasher: inout Hasher) {
		hasher.combine(name)
		hasher.combine(ObjectIdentifier(declaredSuite))
	}
}
