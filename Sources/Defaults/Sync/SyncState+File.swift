import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

// Where sync keeps what it agreed on and what it still has to push, and how those files reach the disk.
extension SyncState {
	/// What was found at the state file's place.
	enum Loaded {
		/// No file: a machine that never synced here (or whose queue file is gone too).
		case none
		case state(SyncState)
		/// The file is missing while the queue file beside it says it existed, or it does not decode.
		case lost(reason: String)
	}

	static func load(from url: URL?) -> Loaded {
		guard let url else {
			return .none
		}
		guard case .bytes(let data) = Defaults.SyncEngine.readFileBeside(at: url) else {
			let hadState = FileManager.default.fileExists(atPath: SyncQueue.url(besideStateFile: url).path)
			return hadState ? .lost(reason: "it is missing") : .none
		}
		guard let state = try? JSONDecoder().decode(SyncState.self, from: data) else {
			return .lost(reason: "it does not decode (\(data.count) bytes)")
		}
		return .state(state)
	}

	/// Writes the state where a crash leaves either the old file or the new one, both complete: a temporary file,
	/// synced to disk, renamed over the old one, and the folder synced. Readable by its owner only, as the settings
	/// file is: it holds copies of the synced values.
	///
	/// - Returns: whether the state is on disk.
	@discardableResult
	func save(to url: URL?) -> Bool {
		guard let url, let data = try? JSONEncoder().encode(self) else {
			return url == nil
		}
		return DurableFile.write(data, to: url)
	}
}

extension SyncQueue {
	/// `<state file>` with `.queue.json` in place of `.json` (or added).
	static func url(besideStateFile stateFile: URL) -> URL {
		let path = stateFile.path
		let base = path.hasSuffix(".json") ? String(path.dropLast(".json".count)) : path
		return URL(filePath: base + ".queue.json")
	}

	static func load(besideStateFile stateFile: URL?) -> SyncQueue {
		// A missing or unreadable queue file starts an empty queue (the engine replaces an unreadable one when it
		// next writes the queue).
		guard let stateFile, case .queue(var queue) = read(at: url(besideStateFile: stateFile)) else {
			return SyncQueue()
		}
		// What `defaults` recorded while no engine ran is queued like this machine's own changes.
		queue.names.formUnion(queue.recordedElsewhere ?? [])
		queue.recordedElsewhere = nil
		return queue
	}
}

/// Replaces a small file beside a settings file so that a crash at any point leaves the old contents or the new,
/// never a mix or nothing: Storage's one way to write beside a settings file (exclusive temporary file, no link
/// followed, root's rules for the settings file), reached through sync's contact file.
enum DurableFile {
	static func write(_ data: Data, to url: URL, mode: mode_t = 0o600) -> Bool {
		Defaults.SyncEngine.replaceFileBeside(at: url, with: data, mode: mode)
	}
}
