import Foundation

// Where sync keeps what it agreed on, and how that file reaches the disk.
extension SyncState {
	/// What was found at the state file's place.
	enum Loaded {
		/// No file: a machine that never synced here.
		case none
		case state(SyncState)
		/// The file is missing while the journal beside the settings file says it existed, or it does not decode.
		case lost(reason: String)

		var state: SyncState? {
			if case .state(let state) = self { state } else { nil }
		}
	}

	/// - Parameter hadState: whether something beside the file says a state was there (the change journal).
	static func load(from url: URL?, hadState: Bool = false) -> Loaded {
		guard let url else {
			return .none
		}
		func lostOrNone(_ reason: String) -> Loaded {
			let hadQueue = FileManager.default.fileExists(atPath: queueFile(besideStateFile: url).path)
			return hadState || hadQueue ? .lost(reason: reason) : .none
		}
		let data: Data
		switch Defaults.SyncEngine.readFileBeside(at: url) {
		case .bytes(let bytes): data = bytes
		case .missing: return lostOrNone("it is missing")
		case .refused(let reason): return lostOrNone("it could not be read (\(reason))")
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
		let encoder = JSONEncoder()
		encoder.outputFormatting = .sortedKeys
		guard let url, let data = try? encoder.encode(self) else {
			return url == nil
		}
		return Defaults.SyncEngine.replaceFileBeside(at: url, with: data, mode: 0o600)
	}

	// MARK: The first form

	/// Where the first form kept the keys waiting to be pushed: `<state file>` with `.queue.json` for `.json`.
	static func queueFile(besideStateFile stateFile: URL) -> URL {
		let path = stateFile.path
		let base = path.hasSuffix(".json") ? String(path.dropLast(".json".count)) : path
		return URL(filePath: base + ".queue.json")
	}

	/// The first form's queue file: the names it held, changed here or by `defaults`, not yet pushed.
	private struct Queue: Decodable {
		var names: Set<String> = []
		var recordedElsewhere: Set<String>?
	}

	/// Brings a state of the first form to this one: a machine id, nothing settled, and the names of the first
	/// form's queue file, which the caller records in the journal as changes to push (the queue file is removed).
	///
	/// - Returns: the names that waited to be pushed, sorted; empty for a state already of this form.
	mutating func migrate(besideStateFile stateFile: URL?) -> [String] {
		guard format != Self.currentFormat else {
			return []
		}
		format = Self.currentFormat
		machine = machine ?? Self.newMachineID()
		settled = settled ?? [:]
		guard let stateFile else {
			return []
		}
		let url = Self.queueFile(besideStateFile: stateFile)
		guard case .bytes(let data) = Defaults.SyncEngine.readFileBeside(at: url),
			let queue = try? JSONDecoder().decode(Queue.self, from: data)
		else {
			return []
		}
		return queue.names.union(queue.recordedElsewhere ?? []).sorted()
	}
}
