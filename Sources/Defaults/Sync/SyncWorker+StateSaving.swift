import Foundation

// The state file after watch messages: written once for a burst of them, not once each.
extension SyncWorker {
	/// How long the state may hold heard remote changes before it is written: under the file store's flush delay
	/// (100 ms), so that the settings file holding an applied value rarely reaches the disk before the state that
	/// agrees on it (a machine killed in between pushes that value once more at its next start, and loses the
	/// compare-and-swap to the same value, which is no conflict).
	static let stateSaveDelay: Duration = .milliseconds(50)

	/// Writes the state soon, once for every watch message heard until then (each write flushes the settings file
	/// and fsyncs the state file twice over). Whatever acts on the state on disk writes it first anyway: a push
	/// (before its requests go out), a full read, `synchronize()`, the exit.
	///
	/// Not written at once, the state is at worst older on disk than in memory: a machine stopped in between resumes
	/// its watch from an older revision and hears those changes again, which it applies again.
	func scheduleStateSave() {
		guard !isStateSavePending.exchange(true, ordering: .relaxed) else {
			return
		}
		Task {
			try? await Task.sleep(for: Self.stateSaveDelay)
			self.saveScheduledState()
		}
	}

	/// Writes the state if remote changes wait in it.
	func saveStateIfPending() {
		if isStateSavePending.load(ordering: .relaxed) {
			saveState()
		}
	}

	private func saveScheduledState() {
		saveStateIfPending()
		// The settings file could not be written: the next watch message, push or read tries again.
		isStateSavePending.store(false, ordering: .relaxed)
	}
}
