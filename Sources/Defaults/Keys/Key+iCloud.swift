import Foundation

// Every initializer of the well-known package takes `iCloud:`; these are the ones `Key.swift` lacks.
extension Defaults.Key {
	/// Creates a key whose default is computed when it is needed, synced across machines when `iCloud` is `true`.
	///
	/// ```swift
	/// static let camera = Key<String>("camera", iCloud: true) { ProcessInfo.processInfo.hostName }
	/// ```
	///
	/// The closure is called as for ``init(_:suite:bridge:alsoReading:default:)``. With `iCloud: true` the key is
	/// added to ``Defaults/iCloud`` as it is created.
	public convenience init(
		_ name: String, suite: any Defaults.Store = Defaults.standardStore, iCloud: Bool,
		default defaultValue: @escaping () -> Value
	) {
		self.init(name, suite: suite, default: defaultValue)
		if iCloud {
			Defaults.iCloud.add(self)
		}
	}

	/// Creates a key whose default is computed when it is needed, synced across machines when `iCloud` is `true`,
	/// with `default:` before `iCloud:` (the well-known package's own order is `iCloud:` first, which this package
	/// takes too).
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

	/// Creates an optional key, whose default is `nil`, synced across machines when `iCloud` is `true`.
	///
	/// ```swift
	/// static let lastFile = Key<String?>("lastFile", iCloud: true)
	/// ```
	public convenience init<Wrapped>(
		_ name: String, suite: any Defaults.Store = Defaults.standardStore, iCloud: Bool
	) where Value == Wrapped? {
		self.init(name, suite: suite)
		if iCloud {
			Defaults.iCloud.add(self)
		}
	}
}
