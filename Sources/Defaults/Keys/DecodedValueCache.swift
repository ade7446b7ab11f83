import Foundation
import Synchronization

/// The last value a key decoded, with the stored form it came from, so that an unchanged stored form is not decoded
/// again.
final class DecodedValueCache<Value>: @unchecked Sendable {
	// Separate fields rather than one optional entry, so that a hit compares in place and copies only the value.
	private let mutex = LockedState(())
	private var store: ObjectIdentifier?
	private var version: UInt64 = 0
	private var storedForm: Any?
	private var value: Value?

	/// The cached value if it was decoded from `stored` in `store`: the same version, or else an equal stored form.
	///
	/// A store's version may change for other keys' changes too (the file store keeps one for the whole store), so a
	/// changed version falls back to comparing the stored forms, which is cheap next to decoding; an equal form
	/// adopts the new version so that the next read is a plain comparison of numbers again.
	func value(in store: any Defaults.Store, matching stored: Defaults.VersionedValue) -> Value? {
		let identifier = ObjectIdentifier(store)
		return mutex.withLock { _ in
			guard self.store == identifier else {
				return nil
			}
			if stored.version != 0, version == stored.version {
				return value
			}
			guard let storedForm, Defaults.PropertyList.isEqual(storedForm, stored.value) else {
				return nil
			}
			version = stored.version
			return value
		}
	}

	func remember(_ value: Value, in store: any Defaults.Store, for stored: Defaults.VersionedValue) {
		let identifier = ObjectIdentifier(store)
		mutex.withLock { _ in
			self.store = identifier
			self.version = stored.version
			self.storedForm = stored.value
			self.value = value
		}
	}
}
