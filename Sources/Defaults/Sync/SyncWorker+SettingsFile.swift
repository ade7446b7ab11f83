import Foundation

// The settings file under the push: a value goes out only once it is on this machine's disk, and keys a lost file
// took away are not pushed as removals until the engine has put back what it agreed on.
extension SyncWorker {
	/// Puts the store's pending writes on disk; when it cannot, says so once (until it can again).
	///
	/// A value pushed while its settings file is not written would be in the remote but not on this machine's
	/// disk: a machine stopped then restarts with its older value and takes it for a newer local edit.
	///
	/// - Returns: whether the local values are on disk.
	func localValuesAreDurable() -> Bool {
		guard Defaults.SyncEngine.makeLocalValuesDurable(in: store.store) else {
			if !isUndurableReported {
				isUndurableReported = true
				Defaults.report(
					Defaults.Failure(
						keyName: prefix, reason: .storage,
						message:
							"The local changes of '\(prefix)' could not be written to the settings file, so none was pushed: a value in the remote must also be on this machine's disk. They are pushed once the file is written."
					))
			}
			return false
		}
		isUndurableReported = false
		return true
	}

	/// Forgets a loss of the settings file once every synced key this machine agreed on a value for is in the store
	/// again: from then on, a key gone is a removal again.
	func clearSettingsFileLossOnceRestored(synced: Set<String>) {
		let mark = Defaults.SyncEngine.settingsFileLossMark(for: store.store)
		guard mark != 0 else {
			return
		}
		let stored = Set(store.store.storedKeys())
		let isRestored = synced.allSatisfy { name in
			stored.contains(name) || state.agreedLocalValue(forKey: name) == nil
		}
		if isRestored {
			Defaults.SyncEngine.clearSettingsFileLoss(for: store.store, ifStill: mark)
		}
	}
}
