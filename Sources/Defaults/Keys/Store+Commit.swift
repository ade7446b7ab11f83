extension Defaults.Store {
	/// The one write primitive of the package: stores `stored` (removes the value for `nil`), forgets that the key's
	/// old value failed to decode, and lets the change hub tell observers.
	///
	/// Observation sits beside the write, not in it: while nothing is observed and nothing taps writes (sync), a write
	/// costs two atomic loads more than the store's own work.
	@inline(__always)
	func commit(_ stored: Any?, forKey key: String) {
		let hub = ChangeHub.shared
		if hub.isObservingAnything {
			hub.deliver(stored, forKey: key, in: self) {
				apply(stored, forKey: key)
			}
		} else {
			apply(stored, forKey: key)
		}
		if CommitTaps.isActive {
			CommitTaps.note(key, in: self)
		}
	}

	private func apply(_ stored: Any?, forKey key: String) {
		// Whatever is stored now is new: if it does not decode either, that is worth a report of its own.
		DecodingFailures.forget(key: key, in: self)
		if let stored {
			setStoredValue(stored, forKey: key)
		} else {
			removeStoredValue(forKey: key)
		}
	}
}
