import Foundation

/// A store that reads some keys from layers it never writes (launch arguments), above or beneath the values it
/// stores. The layers above Storage ask it for what only the stored values say, so that nothing of another layer is
/// pushed by sync, recorded by a snapshot or moved by a migration.
protocol LayeredStore: Defaults.Store {
	/// The value the store keeps for `key` itself (the one a write replaces), without the other layers; `nil` when it
	/// keeps none.
	func ownValue(forKey key: String) -> Any?
	/// The text of the launch argument that gives `key` the value it reads, when that argument is a plain string: a
	/// key of another type reads it as `UserDefaults` would (a number, a Boolean).
	func argumentText(forKey key: String) -> String?
}

extension Defaults.Store {
	/// The value the store keeps for `key` itself, without launch arguments or registered defaults: what sync pushes,
	/// snapshots record and migrations move.
	func ownValue(forKey key: String) -> Any? {
		if let layered = self as? any LayeredStore {
			return layered.ownValue(forKey: key)
		}
		guard storedKeys().contains(key) else {
			return nil
		}
		return storedValue(forKey: key)
	}
}

// The layers a file store reads beside its stored values. Each is kept whole in memory and folded into `above` (read
// before the stored values) or `beneath` (read after them) when it changes, never at a read, so that a read costs one
// lookup per layer group, and a store without layers above its values skips them with one check.
extension Defaults.FileStore: LayeredStore {
	func ownValue(forKey key: String) -> Any? {
		memory.withLock { $0.values[key] }
	}

	func argumentText(forKey key: String) -> String? {
		memory.withLock { $0.arguments[key] as? String }
	}

	/// Sets the launch-argument domain, read above the stored values.
	func setArguments(_ arguments: [String: Any]) {
		memory.withLock { memory in
			memory.arguments = arguments
			memory.above = arguments
		}
	}
}
