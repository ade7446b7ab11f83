// The atomic update's package entry point, reachable from the benchmark package (another package, which `package`
// access does not reach) until `Defaults.update` calls it; not public API.
extension Defaults.SyncEngine {
	/// `atomicUpdate(forKey:in:_:)` for the benchmarks: the stored form committed (`nil`: absent, or the key not synced).
	@_spi(Benchmarks)
	public static func benchmarkAtomicUpdate(
		forKey name: String, in store: any Defaults.Store, _ transform: (Any?) throws -> Any?
	) async throws -> Any? {
		switch try await atomicUpdate(forKey: name, in: store, transform) {
		case .notSynced: nil
		case .updated(let value): value
		}
	}
}
