import Foundation

// The one spelling of the well-known package's initializers that the ones in `Key.swift` do not take.
extension Defaults.Key {
	/// Creates a key whose default is computed when it is needed, synced across machines when `iCloud` is `true`,
	/// with `default:` before `iCloud:` (the well-known package's own order is `iCloud:` first, which
	/// ``init(_:suite:iCloud:bridge:alsoReading:default:)`` takes).
	///
	/// ```swift
	/// static let camera = Key<String>("camera", default: { ProcessInfo.processInfo.hostName }, iCloud: true)
	/// ```
	public convenience init(
		_ name: String, suite: any Defaults.Store = Defaults.standardStore,
		default defaultValue: @escaping () -> Value, iCloud: Bool
	) {
		self.init(name, suite: suite, iCloud: iCloud, default: defaultValue)
	}
}
