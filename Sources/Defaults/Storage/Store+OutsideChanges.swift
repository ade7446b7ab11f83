import Synchronization

extension Defaults.Store {
	/// Reports that the values of `keys` changed outside the package's writes: another process rewrote the store's
	/// file, a database's change feed delivered a row, a sync engine applied a remote change. The one entry point
	/// for outside changes.
	///
	/// Call it after the store holds the new values, so that observers read them. The package then counts the change
	/// (keys read again instead of answering from the value they remembered) and tells the observers of those keys;
	/// only observed keys cost anything, and the old value an observer gets is the last one the package saw for the
	/// key. Such changes are heard also inside `Defaults.withoutPropagation`, which hides only writes made in its
	/// closure.
	///
	/// ```swift
	/// store.reportOutsideChanges(["volume"])
	/// ```
	public func reportOutsideChanges(_ keys: Set<String>) {
		guard !keys.isEmpty else {
			return
		}
		OutsideChangeRoute.deliver(keys, from: self)
	}
}

/// How a store's report of outside changes reaches the package: storage's side of the seam, knowing nothing of who
/// listens. The layer above connects its receiver once (each store's runtime takes the report from there).
package enum OutsideChangeRoute {
	package typealias Receiver = @Sendable (any Defaults.Store, Set<String>) -> Void

	private static let receiver = LockedState<Receiver?>(nil)

	/// Makes `receive` the one receiver of every store's outside changes.
	package static func connect(_ receive: @escaping Receiver) {
		receiver.withLock { $0 = receive }
	}

	static func deliver(_ keys: Set<String>, from store: some Defaults.Store) {
		receiver.withLock { $0 }?(store, keys)
	}
}
