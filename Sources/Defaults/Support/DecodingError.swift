extension Defaults {
	/// Why a stored value did not decode: what was stored, which bridges tried it, and why each refused it.
	public struct DecodingError: Error, @unchecked Sendable, CustomStringConvertible {
		/// The key whose value did not decode: the one the caller named, the ``Defaults/Failure/keyName`` of the
		/// failure that carries this error.
		package let keyName: String
		/// The stored value, as a normalised property-list value. It is left in the store as it is.
		public let storedValue: Any
		/// The bridge the key reads with first (the ``description`` names it).
		package let bridgeName: String
		/// Why the key's bridge refused the stored value.
		public let reason: String
		/// The further forms the key accepts, each with why it refused the stored value (the ``description`` lists
		/// them).
		package let alsoTried: [(bridgeName: String, reason: String)]
		/// The stored value's type and the start of its contents, as printed when the error was made (the printer
		/// belongs to the layers above).
		let storedValueDescription: String

		/// A sentence for logs: the key, what was stored, and why it did not decode.
		public var description: String {
			var text =
				"The value stored for the key '\(keyName)' does not decode: \(reason) (bridge: \(bridgeName); stored: \(storedValueDescription))."
			for attempt in alsoTried {
				text += " Also tried \(attempt.bridgeName): \(attempt.reason)."
			}
			return text + " The key reads as its default; the stored value is left as it is."
		}
	}
}
