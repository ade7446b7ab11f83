import Defaults
import Foundation

/// A domain as the app reads it: the values an administrator locked, above the user's values, above the system-wide
/// defaults (`<name>.locks.plist` and `<name>.plist` in the folders of `$XDG_CONFIG_DIRS`, the first folder winning
/// key by key), each value with the file it comes from.
///
/// Read as the file store reads these files (``SettingsFile/read()``, the same folders and names), without opening a
/// store: nothing is created, moved or locked. A system file that does not read is left out, as the app leaves it out,
/// with a warning.
struct DomainLayers {
	/// Where a value comes from, as `read -source` names it (the names of ``Defaults/Layer``).
	enum Layer: String {
		case locked, stored, system
	}

	/// The layer and the file that give a key its value.
	struct Source {
		let layer: Layer
		let file: String
	}

	/// The user's values: the domain's own file, the only layer the command writes without `-system`.
	var stored: [String: Any] = [:]
	var storedFile: String
	/// Whether the user's file exists.
	var storedFileExists = false
	var system: [String: Any] = [:]
	var systemBy: [String: String] = [:]
	var locked: [String: Any] = [:]
	var lockedBy: [String: String] = [:]
	/// Whether any of the files exists.
	var exists = false

	/// The values the app reads: locked above stored above system-wide.
	var values: [String: Any] {
		stored.merging(system) { stored, _ in stored }.merging(locked) { _, locked in locked }
	}

	/// Where the value of `key` comes from; `nil` when no layer sets it.
	func source(of key: String) -> Source? {
		if let file = lockedBy[key] {
			return Source(layer: .locked, file: file)
		}
		if stored[key] != nil {
			return Source(layer: .stored, file: storedFile)
		}
		return systemBy[key].map { Source(layer: .system, file: $0) }
	}

	/// Refuses a change of `keys` when an administrator locked one of them: nothing is written then.
	func refuseLocked(_ keys: some Sequence<String>, in domain: Domain) throws(ToolError) {
		let refused = Set(keys.filter { lockedBy[$0] != nil }).sorted()
		guard !refused.isEmpty else {
			return
		}
		let files = Set(refused.compactMap { lockedBy[$0] }).sorted().joined(separator: ", ")
		let names = refused.map { "'\($0)'" }.joined(separator: ", ")
		let one = refused.count == 1
		throw ToolError(
			"The key\(one ? "" : "s") \(names) of \(domain.name) \(one ? "is" : "are") locked by the administrator "
				+ "(\(files)): the app reads the locked value\(one ? "" : "s") whatever is stored, so nothing was "
				+ "written.",
			status: .locked)
	}

	/// Refuses `delete` of `key` when the user's file does not hold it, saying which layer does.
	func refuseMissingStored(_ key: String, in domain: Domain) throws(ToolError) {
		guard stored[key] == nil else {
			return
		}
		if let file = systemBy[key] {
			throw .notFound(
				"The key '\(key)' of \(domain.name) is a system-wide default (\(file)), which delete leaves alone: it "
					+ "removes the user's values only, and \(domain.path) has none for it.")
		}
		throw .notFound("The domain/default pair of (\(domain.name), \(key)) does not exist.")
	}

	/// The values of `urls` merged, the first file's value of a key winning, with the file each came from; a file
	/// that does not read is reported and left out.
	static func readMerged(_ urls: [URL], exists: inout Bool) -> (values: [String: Any], sources: [String: String]) {
		var merged: [String: Any] = [:]
		var sources: [String: String] = [:]
		// The last file first, so that an earlier file's value of a key replaces a later one's.
		for url in urls.reversed() {
			let file = SettingsFile(url: url)
			switch file.read() {
			case .missing:
				break
			case .values(let values, _):
				exists = true
				merged.merge(values) { _, earlier in earlier }
				for key in values.keys {
					sources[key] = file.path
				}
			case .unreadable(let data, _, _) where data.isEmpty:
				exists = true
			case .unreadable(_, _, let reason), .inaccessible(let reason):
				Output.error(
					"warning: The system-wide file \(file.path) is refused (\(reason)); the app does not read it, so "
						+ "its values are left out.")
			}
		}
		return (merged, sources)
	}
}

extension Domain {
	/// The domain through its layers; a domain none of whose files exists is an error when `mustExist`.
	///
	/// - Throws: a corrupt or unreadable file of the user's always, as ``values(mustExist:)`` does.
	func layers(mustExist: Bool) throws(ToolError) -> DomainLayers {
		var layers = DomainLayers(storedFile: path)
		if let stored = try storedValues() {
			layers.stored = stored
			layers.storedFileExists = true
			layers.exists = true
		}
		(layers.system, layers.systemBy) = DomainLayers.readMerged(systemFileURLs, exists: &layers.exists)
		(layers.locked, layers.lockedBy) = DomainLayers.readMerged(locksFileURLs, exists: &layers.exists)
		if mustExist, !layers.exists {
			throw .notFound("Domain \(name) does not exist (no file at \(path)).")
		}
		return layers
	}

	/// The system-wide defaults files the app reads beneath this domain, in order of precedence.
	var systemFileURLs: [URL] {
		systemFolders.map { $0.appending(path: systemFileName, directoryHint: .notDirectory) }
	}

	/// The files of locked values the app reads above this domain, in order of precedence.
	var locksFileURLs: [URL] {
		let name = Defaults.FileStore.locksFileName(ofFileNamed: systemFileName)
		return systemFolders.map { $0.appending(path: name, directoryHint: .notDirectory) }
	}
}
