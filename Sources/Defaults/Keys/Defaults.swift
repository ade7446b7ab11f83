import Foundation

/// Typed, bridge-based persistence of settings.
///
/// Declare a key once, with its type and default, then read and write it anywhere:
///
/// ```swift
/// import Defaults
///
/// extension Defaults.Keys {
/// 	static let quality = Key<Double>("quality", default: 0.8)
/// }
///
/// Defaults[.quality] = 0.5
/// print(Defaults[.quality]) // 0.5
/// ```
///
/// `Defaults` is a namespace: every type of the package lives inside it (``Defaults/Key``,
/// ``Defaults/Bridge``, ``Defaults/Serializable``, ``Defaults/Store`` …).
public enum Defaults {}

extension Defaults {
	#if canImport(ObjectiveC)
		/// The store keys use when none is named: `UserDefaults.standard`.
		///
		/// On Linux it is ``Defaults/FileStore/standard`` instead, which keeps Foundation's file but writes it
		/// durably and atomically.
		nonisolated(unsafe) public static let standardStore: any Store = UserDefaults.standard
	#else
		/// The store keys use when none is named: ``Defaults/FileStore/standard``.
		///
		/// It is the file of Foundation's `UserDefaults.standard`, written durably and atomically, safely across
		/// processes, with dates kept exact. On Apple platforms the standard store is `UserDefaults.standard`.
		nonisolated(unsafe) public static let standardStore: any Store = Defaults.FileStore.standard
	#endif
}

extension Defaults {
	/// Reads or writes the value of `key` in the key's own store (``Defaults/Keys/suite``).
	///
	/// Reading returns the stored value, or the key's default when nothing is stored or what is stored does not
	/// decode (the stored data is then left untouched and the failure is reported, see ``Defaults/Failure``).
	/// Writing `nil` to an optional key removes the stored value.
	///
	/// ```swift
	/// Defaults[.quality] += 0.1
	/// ```
	public static subscript<Value: Serializable>(key: Key<Value>) -> Value {
		// Inlinable so that callers get the read specialised for `Value` (see `Key.value(in:)`), and the write too.
		// The declared store, not `key.suite`: the read's fast path finds a stand-in without a look (see `StandInScope`).
		@inlinable get { key.value(in: key.declaredSuite) }
		@inlinable set {
			if key.storesAsIs {
				key.commit(storedValue: newValue)
			} else {
				key.suite[key] = newValue
			}
		}
	}

	/// Removes the stored values of `keys`, so that each reads as its default again.
	///
	/// ```swift
	/// Defaults.reset(.quality, .name)
	/// ```
	public static func reset(_ keys: Keys...) {
		reset(keys)
	}

	/// Removes the stored values of `keys`, so that each reads as its default again.
	public static func reset(_ keys: [Keys]) {
		for key in keys {
			key.reset()
		}
	}

	/// Removes the stored values named `keys` from `suite`.
	///
	/// Use it for keys you only know by name; prefer ``reset(_:)-(Keys...)`` where you have the key.
	public static func reset(_ keys: String..., suite: any Store = Defaults.standardStore) {
		reset(keys, suite: suite)
	}

	/// Removes the stored values named `keys` from `suite`.
	///
	/// ```swift
	/// Defaults.reset(["quality", "name"], suite: store)
	/// ```
	public static func reset(_ keys: [String], suite: any Store = Defaults.standardStore) {
		let suite = resolved(suite)
		for name in keys {
			suite.removeValue(forKey: name)
		}
	}

	/// Removes every value stored in `suite`.
	///
	/// Registered defaults stay registered, so keys read as their defaults afterwards.
	public static func removeAll(suite: any Store = Defaults.standardStore) {
		let suite = resolved(suite)
		for name in suite.storedKeys() {
			suite.removeValue(forKey: name)
		}
	}
}
