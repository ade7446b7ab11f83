// The asynchronous forms of `Defaults.update`: where an update of a synced key goes to the sync engine, whose
// compare-and-swap against the remote store has to wait for the network.
extension Defaults {
	/// Runs `transform` on the latest value of `key` and stores the result atomically; returns the new value.
	///
	/// The form of `update(_:_:)` for asynchronous code, with the same guarantees and the same rules for
	/// `transform` (it may run more than once, so no side effects, and no reads or writes of other keys through
	/// `Defaults` inside it).
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let sessions = Key<Int>("sessions", default: 0)
	/// }
	///
	/// func startSession() async throws {
	/// 	try await Defaults.update(.sessions) { $0 += 1 }
	/// }
	/// ```
	///
	/// - Throws: what `transform` throws, or ``UpdateError``; nothing was stored then.
	@discardableResult
	public static func update<Value: Serializable>(
		_ key: Key<Value>, _ transform: (inout Value) throws -> Void
	) async throws -> Value {
		// Synced keys: route an update of a key synced through a sync engine to its compare-and-swap loop here; until
		// then every key is updated in its store only.
		try updateLocally(key, transform)
	}

	/// Runs `transform` on the latest values of two or more keys of one store, and stores what it writes atomically.
	///
	/// The form of `update(_:_:_:transaction:)` for asynchronous code.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let drafts = Key<Int>("drafts", default: 1)
	/// 	static let sent = Key<Int>("sent", default: 0)
	/// }
	///
	/// func send() async throws {
	/// 	try await Defaults.update(.drafts, .sent) { mail in
	/// 		mail[.drafts] -= 1
	/// 		mail[.sent] += 1
	/// 	}
	/// }
	/// ```
	///
	/// - Returns: what `transform` returns.
	/// - Throws: what `transform` throws, or ``UpdateError``; nothing was stored then.
	@discardableResult
	public static func update<Result>(
		_ first: Keys, _ second: Keys, _ others: Keys..., transaction transform: (inout Transaction) throws -> Result
	) async throws -> Result {
		// Synced keys: route here too (see update(_:_:) above).
		try updateLocally([first, second] + others, transform)
	}

	/// Runs `transform` on the latest values of `keys`, keys of one store, and stores what it writes atomically.
	///
	/// The form of `update(_:_:)` for asynchronous code.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let opened = Key<Int>("opened", default: 0)
	/// }
	///
	/// func open() async throws {
	/// 	try await Defaults.update([.opened]) { transaction in
	/// 		transaction[.opened] += 1
	/// 	}
	/// }
	/// ```
	///
	/// - Throws: what `transform` throws, or ``UpdateError``; nothing was stored then.
	@discardableResult
	public static func update<Result>(
		_ keys: [Keys], _ transform: (inout Transaction) throws -> Result
	) async throws -> Result {
		// Synced keys: route here too (see update(_:_:) above).
		try updateLocally(keys, transform)
	}
}
