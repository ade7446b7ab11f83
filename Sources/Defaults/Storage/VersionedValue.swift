import Synchronization

extension Defaults {
	/// A stored value with the version it had when it was read (see ``Defaults/Store/versionedValue(forKey:)``).
	public struct VersionedValue: @unchecked Sendable {
		/// The stored value, or the registered default: a normalised property-list value.
		public let value: Any
		/// A number that is different for every change of the value; 0 when the store keeps no versions.
		public let version: UInt64

		/// Pairs a value with its version.
		public init(value: Any, version: UInt64) {
			self.value = value
			self.version = version
		}
	}

	private static let storeVersions = Atomic<UInt64>(0)

	/// A version number no store in this process has handed out: stores take one for every change they make.
	public static func nextStoreVersion() -> UInt64 {
		storeVersions.add(1, ordering: .relaxed).newValue
	}
}

extension Defaults.Store {
	/// The stored value with version 0: no versions kept, so keys compare values to tell that one is unchanged.
	public func versionedValue(forKey key: String) -> Defaults.VersionedValue? {
		storedValue(forKey: key).map { Defaults.VersionedValue(value: $0, version: 0) }
	}
}
