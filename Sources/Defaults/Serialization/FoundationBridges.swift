import Foundation

extension Defaults {
	/// Stores a `URL` as the JSON text of its `Codable` form, such as `"\"https:\\/\\/example.com\""`.
	///
	/// Foundation's own URL storage is not used: on Linux it keeps only the path of a web address.
	public typealias URLBridge = TopLevelCodableBridge<URL>

	/// Stores a `UUID` as its upper-case `uuidString`.
	public struct UUIDBridge: Bridge, Sendable {
		/// Returns `value.uuidString`.
		public func serialize(_ value: UUID?) -> String? {
			value?.uuidString
		}

		/// Returns the UUID that `object` spells, in either case.
		public func deserialize(_ object: String?) -> UUID? {
			object.flatMap(UUID.init(uuidString:))
		}

		func decode(storedForm stored: Any) -> DecodeResult<UUID> {
			guard let uuid = (stored as? String).flatMap(UUID.init(uuidString:)) else {
				return .failure(
					"expected a UUID string such as E621E1F8-C36C-495A-93FC-0C247A3E6E5F, found "
						+ BridgeDiagnosis.describe(stored))
			}
			return .value(uuid)
		}
	}
}

/// A URL is stored as the JSON text of its `Codable` form, never through Foundation's lossy URL storage.
extension URL: Defaults.Serializable {
	/// ``Defaults/URLBridge``: JSON text.
	public static let bridge = Defaults.URLBridge()
}

/// A UUID is stored as its upper-case `uuidString`.
extension UUID: Defaults.Serializable {
	/// ``Defaults/UUIDBridge``: the `uuidString`.
	public static let bridge = Defaults.UUIDBridge()
}

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.UUIDBridge: DecodingBridge {}
