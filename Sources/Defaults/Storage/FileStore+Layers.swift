import Foundation

/// A store that reads some keys from layers it never writes (launch arguments), above or beneath the values it
/// stores. The layers above Storage ask it for what only the stored values say, so that nothing of another layer is
/// pushed by sync, recorded by a snapshot or moved by a migration.
protocol LayeredStore: Defaults.Store {
	/// The value the store keeps for `key` itself (the one a write replaces), without the other layers; `nil` when it
	/// keeps none.
	func ownValue(forKey key: String) -> Any?
	/// The text of the launch argument that gives `key` the value it reads, when that argument is a plain string: a
	/// key of another type reads it as `UserDefaults` would (a number, a Boolean).
	func argumentText(forKey key: String) -> String?
}

extension Defaults.Store {
	/// The value the store keeps for `key` itself, without launch arguments or registered defaults: what sync pushes,
	/// snapshots record and migrations move.
	func ownValue(forKey key: String) -> Any? {
		if let layered = self as? any LayeredStore {
			return layered.ownValue(forKey: key)
		}
		guard storedKeys().contains(key) else {
			return nil
		}
		return storedValue(forKey: key)
	}
}

// The layers a file store reads beside its stored values. Each is kept whole in memory and folded into `above` (read
// before the stored values) or `beneath` (read after them) when it changes, never at a read, so that a read costs one
// lookup per layer group, and a store without layers above its values skips them with one check.
extension Defaults.FileStore: LayeredStore {
	func ownValue(forKey key: String) -> Any? {
		memory.withLock { $0.values[key] }
	}

	func argumentText(forKey key: String) -> String? {
		memory.withLock { $0.arguments[key] as? String }
	}

	/// Sets the launch-argument domain, read above the stored values.
	func setArguments(_ arguments: [String: Any]) {
		memory.withLock { memory in
			memory.arguments = arguments
			memory.above = arguments
		}
	}
}

// System-wide defaults: `<folder>/<file name>` in each folder of `$XDG_CONFIG_DIRS`, beneath the user's values and
// above registered defaults. Read with the store's own bounded reader; a file that does not read is refused and
// reported, never moved or changed: it belongs to the administrator.
extension Defaults.FileStore {
	/// The folders of `$XDG_CONFIG_DIRS` (colon-separated, absolute paths only, as the XDG Base Directory
	/// specification says), else `/etc/xdg`.
	static func systemConfigurationDirectories(
		environment: [String: String] = ProcessInfo.processInfo.environment
	) -> [URL] {
		guard let variable = environment["XDG_CONFIG_DIRS"], !variable.isEmpty else {
			return [URL(filePath: "/etc/xdg", directoryHint: .isDirectory)]
		}
		return variable.split(separator: ":").filter { $0.hasPrefix("/") }.map {
			URL(filePath: String($0), directoryHint: .isDirectory)
		}
	}

	/// The store of the file at `url`, reading system-wide defaults from the folders `systemFolders`.
	static func at(_ url: URL, systemFolders: [URL]) -> Defaults.FileStore {
		FileStoreRegistry.store(at: url, systemFolders: systemFolders)
	}

	func loadSystemLayer(failures: inout [Defaults.Failure]) {
		guard !systemFiles.isEmpty else {
			return
		}
		_ = takeSystemLayer(failures: &failures)
	}

	/// Reads the system files again and tells observers of the keys whose value changed for reads.
	func reloadSystemLayer() {
		var failures: [Defaults.Failure] = []
		// Under the disk lock, so that two reloads in a row install their reads in order.
		let changed = disk.withLock { _ in takeSystemLayer(failures: &failures) }
		failures.forEach(Defaults.report)
		if !changed.isEmpty {
			reportOutsideChanges(changed)
		}
	}

	/// Reads every system file and installs what they hold; returns the keys whose read value changed.
	private func takeSystemLayer(failures: inout [Defaults.Failure]) -> Set<String> {
		var merged: [String: Any] = [:]
		var problems: [String: String] = [:]
		// The last folder first, so that an earlier folder's value of a key replaces a later one's.
		for systemFile in systemFiles.reversed() {
			switch systemFile.read() {
			case .missing:
				break
			case .values(let values, _):
				merged.merge(values) { _, earlier in earlier }
			case .unreadable(let data, _, _) where data.isEmpty:
				break
			case .unreadable(_, _, let reason), .inaccessible(let reason):
				problems[systemFile.path] = reason
			}
		}
		return memory.withLock { memory in
			for (path, reason) in problems where memory.systemProblems[path] != reason {
				failures.append(
					storageFailure(
						"The system-wide defaults file \(path) is refused (\(reason)); its values are not read until "
							+ "it is fixed, and it is left as it is."))
			}
			memory.systemProblems = problems
			let changed = Self.changedKeys(from: memory.system, to: merged)
			guard !changed.isEmpty else {
				return []
			}
			memory.system = merged
			memory.beneath = memory.registered.merging(merged) { _, system in system }
			// A key the user or a launch argument sets reads as it did.
			return changed.filter { memory.values[$0] == nil && memory.above[$0] == nil }
		}
	}
}
