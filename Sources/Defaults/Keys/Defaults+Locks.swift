import Foundation

// Keys an administrator locked (`<name>.locks.plist` in a folder of `$XDG_CONFIG_DIRS`, see the article "Layers"):
// what the app can ask, and the error of the writes that say so by throwing.

extension Defaults {
	/// Whether an administrator locked `key`: it reads the value the administrator fixed, and a write of it changes
	/// nothing. The counterpart of `UserDefaults.objectIsForced(forKey:)`; use it to disable the control that edits
	/// the setting.
	///
	/// ```swift
	/// toggle.isEnabled = !Defaults.isLocked(.updateChannel)
	/// ```
	///
	/// Only the standard file store and suites read locks; a key of any other store is never locked.
	public static func isLocked(_ key: Keys) -> Bool {
		(key.suite as? any LayeredStore)?.isLocked(key.name) ?? false
	}

	/// A write of a key an administrator locked: nothing was stored.
	///
	/// ```swift
	/// do {
	/// 	try store.write("beta", forKey: "updateChannel")
	/// } catch let error as Defaults.LockedKeyError {
	/// 	print(error)  // names the key and the file that locks it
	/// }
	/// ```
	public struct LockedKeyError: Error, Sendable, CustomStringConvertible {
		/// The locked key's name (the caller wrote it; the ``description`` names it).
		package let keyName: String
		/// The file that locks it (the ``description`` names it; ``Defaults/layer(of:)`` returns it as
		/// ``Defaults/Layer/locked(file:)``).
		package let lockFile: String

		/// The key, the file and what was left as it was, as a sentence.
		public var description: String {
			"The key '\(keyName)' is locked by the administrator (\(lockFile)); nothing was stored."
		}
	}
}

extension Defaults.Store {
	/// Throws when an administrator locked `key` in this store.
	func refuseLockedKey(_ key: String) throws(Defaults.LockedKeyError) {
		guard let layered = self as? any LayeredStore, let lockFile = layered.lockFile(ofKey: key) else {
			return
		}
		throw Defaults.LockedKeyError(keyName: key, lockFile: lockFile)
	}
}

extension Defaults {
	/// The layer that gives `key` the value it reads now.
	///
	/// ```swift
	/// if case .locked(let file) = Defaults.layer(of: .updateChannel) {
	/// 	print("set by the administrator in \(file)")
	/// }
	/// ```
	public static func layer(of key: Keys) -> Layer {
		let store = key.suite
		if let layered = store as? any LayeredStore {
			// An override whose text does not read as the key's value is skipped by reads, and so here.
			return layered.layer(ofKey: key.name, skippingOverrides: !key.overrideReads(in: layered))
		}
		return store.ownValue(forKey: key.name) == nil ? .defaultValue : .stored
	}
}
