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
		// The store's runtime, registered with the store by the layer above, hears it; Storage does not know who
		// listens to the runtime.
		existingAttachments?.existingRuntime?.receiveOutsideChanges(keys, from: self)
	}
}
