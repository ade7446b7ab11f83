import Defaults
import Foundation

/// A domain as the command line names it: a store name, or a settings file.
enum DomainReference {
	/// `<name>.plist` in the configuration folder.
	case named(String)
	/// A file path, relative to the working folder or absolute.
	case file(String)

	/// A path (an argument with `/`, or ending in `.plist`) names a file; anything else is a store name.
	init(argument: String) {
		if argument.contains("/") || argument.hasSuffix(".plist") {
			self = .file(argument)
		} else {
			self = .named(argument)
		}
	}
}

/// What a settings file holds, read without opening a store on it.
enum DomainContents {
	case missing
	case values([String: Any])
	/// Bytes that are not a property list with a dictionary at the top.
	case corrupt(reason: String)
	/// A file that exists but cannot be read.
	case inaccessible(reason: String)
}

/// A domain resolved to its file.
struct Domain {
	/// The name to show: the store name, or the path as given.
	let name: String
	let url: URL
	/// The folders of the system layer the app reads with this file (`$XDG_CONFIG_DIRS`, else `/etc/xdg`): for a
	/// domain in the configuration folder, as a suite's store reads them; none for any other file, which the app
	/// opens with `FileStore.at`, which reads no other layer.
	let systemFolders: [URL]
	/// The name of the domain's files in `systemFolders`: its name in the configuration folder, as the app's store
	/// names them (`FileStore.systemLayer(ofFileAt:)`), a link's name rather than its target's.
	let systemFileName: String

	var path: String { url.path(percentEncoded: false) }

	/// The folder the file store keeps named suites in.
	static var configurationFolder: URL {
		Defaults.FileStore.directory
	}

	init(_ reference: DomainReference, verb: String) throws(ToolError) {
		switch reference {
		case .named(let name):
			// The file is found without opening the store: that waits until the file is known to be sound.
			do {
				url = try Defaults.FileStore.url(forSuiteNamed: name)
			} catch {
				throw .usage("\"\(name)\" is not a domain name: \(error.reason).", verb: verb)
			}
			self.name = name
		case .file(let path):
			guard !path.isEmpty else {
				throw .usage("The domain file path is empty.", verb: verb)
			}
			name = path
			url = URL(filePath: path, directoryHint: .notDirectory).absoluteURL
		}
		(systemFolders, systemFileName) = Defaults.FileStore.systemLayer(ofFileAt: url)
	}

	/// The file's values, read and parsed without a store: nothing is created, moved or locked.
	///
	/// Read as the file store reads it (``SettingsFile/readSettled()``): a file that does not parse is read again
	/// until it stops changing before it is called corrupt, since Foundation rewrites its file in place.
	func contents() -> DomainContents {
		switch SettingsFile(url: url).readSettled() {
		case .missing:
			return .missing
		case .values(let values, _):
			return .values(values)
		case .unreadable(let data, _, _) where data.isEmpty:
			// The file store reads an empty file as an empty store: Foundation truncates before it rewrites.
			return .values([:])
		case .unreadable(_, _, let reason):
			return .corrupt(reason: reason)
		case .inaccessible(let reason):
			return .inaccessible(reason: reason)
		}
	}

	/// The values of the domain; a missing file is an empty domain unless `mustExist`.
	///
	/// - Throws: a corrupt or unreadable file always; a missing one when `mustExist`.
	func values(mustExist: Bool) throws(ToolError) -> [String: Any] {
		guard let values = try storedValues() else {
			if mustExist {
				throw .notFound("Domain \(name) does not exist (no file at \(path)).")
			}
			return [:]
		}
		return values
	}

	/// The values of the domain's own file, `nil` when there is none.
	func storedValues() throws(ToolError) -> [String: Any]? {
		switch contents() {
		case .missing:
			return nil
		case .values(let values):
			return values
		case .corrupt(let reason):
			throw Self.corruptError(path: path, reason: reason)
		case .inaccessible(let reason):
			throw ToolError("The file \(path) cannot be read: \(reason)", status: .noInput)
		}
	}

	static func corruptError(path: String, reason: String) -> ToolError {
		.badValue(
			"The file \(path) is corrupt: \(reason). It was left untouched; fix it, move it away or delete it "
				+ "before writing to this domain.")
	}

	/// Opens the file store of the domain, after checking that its file is sound.
	///
	/// The file store moves a corrupt file aside when it opens it; the command refuses instead, so that the file
	/// stays where it is, byte for byte, and the user decides what to do with it.
	func openStore() throws(ToolError) -> Defaults.FileStore {
		_ = try values(mustExist: false)
		// From here until the verb ends, a terminating signal waits, so that no flush writes the change half done.
		ChangeGuard.begin()
		let store = Defaults.FileStore.at(url)
		// A file that became corrupt between the check and the opening was moved aside by the store, which reported it.
		if let failure = FailureLog.shared.takeStorageFailure() {
			throw ToolError(failure, status: .dataError)
		}
		return store
	}

	/// Changes `key` of `store` in one atomic update under the file's lock (recorded in its change journal, for sync), and turns what
	/// fails into the tool's errors: a `ToolError` from `change` as it is, a file that could not be locked, read or
	/// written as an I/O error, a key an administrator locked as a refused write (77), and any other error as
	/// `otherError` makes it.
	func update<Result>(
		_ key: String, in store: Defaults.FileStore, _ change: (inout [String: Any]) throws -> Result,
		otherError: (any Error) -> ToolError
	) throws(ToolError) -> Result {
		try update({ [key] }, ownValuesOnly: false, in: store, change, otherError: otherError)
	}

	/// Changes `keys` of `store` in one atomic update, as ``update(_:in:_:otherError:)`` changes one; with
	/// `ownValuesOnly`, `change` starts from the user's own values (what a removal, a rename or an import edits).
	/// `keys` is asked for under the file's lock, so that a list taken from the file includes what another process
	/// stored until then.
	func update<Result>(
		_ keys: () -> [String], ownValuesOnly: Bool, in store: Defaults.FileStore,
		_ change: (inout [String: Any]) throws -> Result, otherError: (any Error) -> ToolError
	) throws(ToolError) -> Result {
		do {
			return try store.updateStoredValues(namedUnderTheLock: keys, ownValuesOnly: ownValuesOnly, change)
		} catch let error as ToolError {
			throw error
		} catch let error as Defaults.UpdateError where error.kind == .storage {
			throw ToolError(error.message, status: .ioError)
		} catch let error as Defaults.UpdateError where error.kind == .locked {
			// The store checks its locks under the file's lock, as the update writes: a lock that arrived after the
			// verb's own check and before the store read the locks files is refused as that check refuses.
			throw ToolError(error.message, status: .locked)
		} catch {
			throw otherError(error)
		}
	}

	/// Flushes `store` and turns a failed write into an error. The command's one try: changes it cannot write are
	/// dropped, so that the exit flush does not wait for the same lock again.
	func flush(_ store: Defaults.FileStore) throws(ToolError) {
		let isWritten = store.flushBeforeTheEnd().isEmpty
		if let failure = FailureLog.shared.takeStorageFailure() {
			throw ToolError(failure, status: .ioError)
		}
		if !isWritten {
			throw ToolError("The file \(path) could not be written.", status: .ioError)
		}
	}

	/// The named domains: every `*.plist` file in the configuration folder, sorted.
	static func allNamed() -> [Domain] {
		let folder = configurationFolder
		let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path(percentEncoded: false))) ?? []
		return names.filter { $0.hasSuffix(".plist") && !$0.hasPrefix(".") }
			.map { String($0.dropLast(".plist".count)) }
			.sorted()
			.map { Domain(name: $0, url: folder.appending(path: $0 + ".plist", directoryHint: .notDirectory)) }
	}

	private init(name: String, url: URL) {
		self.name = name
		self.url = url
		(systemFolders, systemFileName) = Defaults.FileStore.systemLayer(ofFileAt: url)
	}
}
