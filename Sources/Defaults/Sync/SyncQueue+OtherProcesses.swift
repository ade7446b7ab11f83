import Foundation

// The queue file is shared with other processes: `defaults` records there the keys it changes in a settings file, so
// that an engine takes removals made while it did not run for removals someone made, not for a lost settings file.
// Both sides change the file under its own cross-process lock, each keeping what the other wrote.
extension SyncQueue {
	/// How long a change of the queue file waits for another process's.
	static let lockWaitLimit = Duration.seconds(2)

	/// What reading the queue file found.
	enum Read {
		case missing
		case queue(SyncQueue)
		case unreadable(reason: String)
	}

	static func read(at url: URL) -> Read {
		let data: Data
		switch Defaults.SyncEngine.readFileBeside(at: url) {
		case .missing:
			return .missing
		case .refused(let reason):
			return .unreadable(reason: "it cannot be read: \(reason)")
		case .bytes(let bytes):
			data = bytes
		}
		guard let queue = try? JSONDecoder().decode(SyncQueue.self, from: data) else {
			return .unreadable(reason: "it does not decode as a sync queue (\(data.count) bytes)")
		}
		return .queue(queue)
	}

	/// Changes the queue file beside `stateFile` under its lock: reads it, lets `change` edit it, and writes it back
	/// atomically when it changed.
	///
	/// - Parameters:
	///   - isOwner: The engine owns the file: it creates a missing one, replaces an unreadable one, and writes even
	///     when the lock cannot be taken (its queue matters more than another process's record). Anyone else
	///     (`defaults`) leaves a missing or unreadable file alone and writes nothing without the lock.
	/// - Returns: `nil` once written (or nothing needed writing), else why not, as a sentence.
	static func change(
		besideStateFile stateFile: URL, isOwner: Bool, _ change: (inout SyncQueue) -> Void
	) -> String? {
		let url = url(besideStateFile: stateFile)
		return Defaults.SyncEngine.withFileLock(of: url, waitingAtMost: lockWaitLimit) { lockProblem in
			if let lockProblem, !isOwner {
				return lockProblem
			}
			return changeLocked(url: url, isOwner: isOwner, change)
		}
	}

	private static func changeLocked(url: URL, isOwner: Bool, _ change: (inout SyncQueue) -> Void) -> String? {
		var queue = SyncQueue()
		var existed = false
		switch read(at: url) {
		case .missing where !isOwner:
			return "The sync queue \(url.path) is missing."
		case .unreadable(let reason) where !isOwner:
			return "The sync queue \(url.path) was left as it is: \(reason)."
		case .queue(let found):
			queue = found
			existed = true
		case .missing, .unreadable:
			break
		}
		let original = queue
		change(&queue)
		guard queue != original || !existed else {
			return nil
		}
		let encoder = JSONEncoder()
		encoder.outputFormatting = .sortedKeys
		guard let data = try? encoder.encode(queue), DurableFile.write(data, to: url) else {
			return "The sync queue \(url.path) could not be written."
		}
		return nil
	}
}

extension Defaults.SyncEngine {
	/// Records in the sync queue beside the settings file at `settingsFile`, if there is one, that the keys named
	/// `names` were changed or removed on purpose by another program (`defaults`), so that the engine that syncs the
	/// file pushes them, removals included, instead of taking many keys gone at once for a lost file. Call it before
	/// the settings file changes.
	///
	/// Only keys the engine has agreed on with its remote are recorded (others cannot be mistaken for a loss); all of
	/// them when its state file cannot be read.
	///
	/// - Returns: `nil` when recorded or when no queue is beside the file (nothing syncs it); else why the queue was
	///   left as it was, as a sentence.
	package static func recordIntendedChanges(
		of names: some Sequence<String>, inSettingsFile settingsFile: URL
	)
		-> String?
	{
		let stateFile = stateFile(besideSettingsFile: settingsFile)
		guard FileManager.default.fileExists(atPath: SyncQueue.url(besideStateFile: stateFile).path) else {
			return nil
		}
		var recorded = Set(names)
		if case .state(let state) = SyncState.load(from: stateFile) {
			recorded.formIntersection(state.records.keys)
		}
		guard !recorded.isEmpty else {
			return nil
		}
		return SyncQueue.change(besideStateFile: stateFile, isOwner: false) { queue in
			queue.recordedElsewhere = (queue.recordedElsewhere ?? []).union(recorded)
		}
	}
}

extension SyncWorker {
	/// Writes the queue under the queue file's lock, taking in what other processes recorded since the last write.
	///
	/// - Returns: whether the queue is on disk.
	func writeSharedQueue() -> Bool {
		guard let stateFile else {
			return true
		}
		var written = queue
		let problem = SyncQueue.change(besideStateFile: stateFile, isOwner: true) { onDisk in
			written.names.formUnion(onDisk.recordedElsewhere ?? [])
			written.recordedElsewhere = nil
			onDisk = written
		}
		queue = written
		return problem == nil
	}

	/// Which of `candidates` (keys gone from the store, removed by no one here) another process recorded as removed
	/// on purpose; they join the queue, as removals to push.
	func namesRecordedElsewhere(among candidates: Set<String>) -> Set<String> {
		guard let stateFile, case .queue(let onDisk) = SyncQueue.read(at: SyncQueue.url(besideStateFile: stateFile))
		else {
			return []
		}
		let recorded = candidates.intersection(onDisk.recordedElsewhere ?? [])
		queue.names.formUnion(recorded)
		return recorded
	}
}
