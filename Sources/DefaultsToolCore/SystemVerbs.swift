import Defaults
import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

// `-system`: root writes the system layer, `<name>.plist` (system-wide defaults) and `<name>.locks.plist` (locked
// keys) in the first folder of `$XDG_CONFIG_DIRS` (else `/etc/xdg`), for `write`, `delete`, `lock` and `unlock`.

extension OptionSpec {
	/// `-system`: the verb changes the system layer of the domain, as root.
	static let system = OptionSpec(
		name: "-system",
		help: """
			change the system layer, as root: <name>.plist (or, for lock and unlock,
			<name>.locks.plist) in the first folder of $XDG_CONFIG_DIRS, else /etc/xdg
			""")
}

extension Verb.Declaration {
	static let lock = Verb.Declaration(
		synopsis: "<domain> <key> [<type flag>] [<value>...]",
		summary: "lock a key for every user (root, with -system)",
		details: """
			Run as root with -system: defaults -system lock <domain> <key> [<value>]. Writes <key> and its value
			to <domain>.locks.plist in the first folder of $XDG_CONFIG_DIRS (else /etc/xdg): every app of every
			user then reads that value, and a write of the key changes nothing (write exits 77). The value
			takes the type flags of write, and a bare value is converted by the app's schema as write converts
			it; with none, the key is locked at its system-wide default. The file is an XML property list, mode
			0644 when new.
			""",
		options: [.system.required, .schema],
		valuesAfter: 2
	) { arguments throws(ToolError) in
		let domain = try arguments.takeSystemDomain()
		let key = try arguments.take("key")
		try domain.requireRoot()
		let value: Any
		if !arguments.values.isEmpty {
			let request = try WriteRequest(
				tokens: arguments.values, key: key, entry: try arguments.schema(of: domain)?.entry(named: key))
			value = try request.value(adding: nil, key: key, domain: domain.name)
		} else {
			var exists = false
			guard let systemDefault = DomainLayers.readMerged(domain.settingsFiles, exists: &exists).values[key]
			else {
				throw .usage(
					"The key '\(key)' of \(domain.name) has no system-wide default to lock it at; give the value.",
					verb: arguments.verb)
			}
			value = systemDefault
		}
		try SystemFile.edit(domain.locksFiles[0]) { values throws(ToolError) in
			values[key] = value
		}
		return .success
	}

	static let unlock = Verb.Declaration(
		synopsis: "<domain> <key>",
		summary: "unlock a key (root, with -system)",
		details: """
			Run as root with -system: defaults -system unlock <domain> <key>. Removes <key> from
			<domain>.locks.plist in the first folder of $XDG_CONFIG_DIRS (else /etc/xdg); the key then reads the
			user's value again. Exits 1 when that file does not lock the key (a lock in a later folder is named,
			and left alone).
			""",
		options: [.system.required]
	) { arguments throws(ToolError) in
		let domain = try arguments.takeSystemDomain()
		let key = try arguments.take("key")
		try arguments.finish()
		try domain.requireRoot()
		try SystemFile.edit(domain.locksFiles[0], mustExist: true) { values throws(ToolError) in
			guard values.removeValue(forKey: key) != nil else {
				throw domain.notLocked(key)
			}
		} missing: { () throws(ToolError) in
			throw domain.notLocked(key)
		}
		return .success
	}

	/// `-system write <domain> <key> <value>`: a system-wide default.
	static func writeSystemDefault(_ arguments: inout VerbArguments) throws(ToolError) -> ExitStatus {
		let domain = try arguments.takeSystemDomain()
		let key = try arguments.take("key")
		try domain.requireRoot()
		let request = try WriteRequest(
			tokens: arguments.values, key: key, entry: try arguments.schema(of: domain)?.entry(named: key))
		try SystemFile.edit(domain.settingsFiles[0]) { values throws(ToolError) in
			values[key] = try request.value(adding: values[key], key: key, domain: domain.settingsFiles[0].path)
		}
		return .success
	}

	/// `-system delete <domain> [<key>]`: a system-wide default, or all of them.
	static func deleteSystemDefault(_ arguments: inout VerbArguments) throws(ToolError) -> ExitStatus {
		let domain = try arguments.takeSystemDomain()
		let key = arguments.takeIfPresent()
		try arguments.finish()
		try domain.requireRoot()
		let file = domain.settingsFiles[0]
		try SystemFile.edit(file, mustExist: true) { values throws(ToolError) in
			guard let key else {
				values = [:]
				return
			}
			guard values.removeValue(forKey: key) != nil else {
				throw .notFound("The system-wide defaults file \(file.path) has no key '\(key)'; nothing was deleted.")
			}
		} missing: { () throws(ToolError) in
			throw .notFound("There is no system-wide defaults file \(file.path); nothing was deleted.")
		}
		return .success
	}
}

/// A domain's system layer, as `-system` names it: by its store name, in the folders of `$XDG_CONFIG_DIRS`.
struct SystemDomain {
	let name: String
	/// `<folder>/<name>.plist` of each folder, in order of precedence; `-system` writes the first.
	let settingsFiles: [URL]
	/// `<folder>/<name>.locks.plist` of each folder, in order of precedence; `-system` writes the first.
	let locksFiles: [URL]

	/// Refuses anyone but root, before anything is read or written: the system layer is the administrator's.
	func requireRoot() throws(ToolError) {
		guard geteuid() == 0 else {
			let folder = settingsFiles[0].deletingLastPathComponent().path(percentEncoded: false)
			throw ToolError(
				"-system changes the system-wide files in \(folder), which only root may do; nothing was written. Run "
					+ "it as root (sudo defaults -system …).",
				status: .ioError)
		}
	}

	/// The error of `unlock` for a key the first folder's locks file does not lock.
	func notLocked(_ key: String) -> ToolError {
		let first = locksFiles[0].path(percentEncoded: false)
		for file in locksFiles.dropFirst() {
			if case .values(let values, _) = SettingsFile(url: file).read(), values[key] != nil {
				return .notFound(
					"The key '\(key)' of \(name) is locked by \(SettingsFile(url: file).path), not by \(first): -system "
						+ "changes the first folder of $XDG_CONFIG_DIRS only, so the lock stays; nothing was changed.")
			}
		}
		return .notFound("The key '\(key)' of \(name) is not locked by \(first); nothing was changed.")
	}
}

extension VerbArguments {
	/// The app's schema for a system write: the file `-schema` names, else the one a user's write of the domain reads,
	/// beside its settings file in the configuration folder. A system-wide default is read by the same keys as the
	/// user's value, so it is converted, or refused, by the same description.
	func schema(of domain: SystemDomain) throws(ToolError) -> SchemaFile? {
		try schema(besideSettingsFile: Domain(.named(domain.name), verb: verb).url)
	}

	/// Takes the domain of a `-system` verb: a store name (its system files are found by name), never a path.
	mutating func takeSystemDomain() throws(ToolError) -> SystemDomain {
		guard has(OptionSpec.system.name) else {
			throw .usage(
				"\(verb) changes the administrator's locks: run it as root with -system (defaults -system \(verb) …).",
				verb: verb)
		}
		guard !has(OptionSpec.app.name), case .named(let name) = try takeDomain() else {
			throw .usage(
				"-system names the domain by its store name (the system files are <name>.plist and "
					+ "<name>.locks.plist), not by a path or -app.", verb: verb)
		}
		do {
			_ = try Defaults.FileStore.url(forSuiteNamed: name)
		} catch {
			throw .usage("\"\(name)\" is not a domain name: \(error.reason).", verb: verb)
		}
		let folders = Defaults.FileStore.systemFolders
		guard !folders.isEmpty else {
			throw .usage(
				"$XDG_CONFIG_DIRS names no absolute folder, so there is no system layer to change.", verb: verb)
		}
		let locksName = Defaults.FileStore.locksFileName(ofFileNamed: name + ".plist")
		return SystemDomain(
			name: name,
			settingsFiles: folders.map { $0.appending(path: name + ".plist", directoryHint: .notDirectory) },
			locksFiles: folders.map { $0.appending(path: locksName, directoryHint: .notDirectory) })
	}
}

/// A file of the system layer, changed by root: read and replaced where it is named, never through a link.
///
/// The folder of system files belongs to the administrator, and every user's app reads the file: root never follows
/// a link at the file's name (whoever planted it) and never replaces one, refuses a file another user may have
/// planted, and keeps the rules of a settings file for the folder (`SettingsFile`, "Running as root" in the file
/// store's article). The change is made under a lock on the folder, so that two runs at once keep both changes. The
/// file is written as an XML property list, which an administrator can read and edit, mode 0644 when new (every
/// user's app reads it), keeping the mode and owner of a file that exists; a value XML would not keep exactly (a
/// date finer than a second) refuses the change.
enum SystemFile {
	/// How long a run waits for another run changing the same folder.
	static let lockWaitLimit = 10.0

	static func edit(
		_ url: URL, mustExist: Bool = false, _ change: (inout [String: Any]) throws(ToolError) -> Void,
		missing: () throws(ToolError) -> Void = {}
	) throws(ToolError) {
		let file = SettingsFile(besideFileAt: url)
		let folder = (file.path as NSString).deletingLastPathComponent
		let lock = try lockFolder(folder)
		defer { close(lock) }
		var status = stat()
		let exists = lstat(file.path, &status) == 0
		if exists, status.st_mode & S_IFMT == S_IFLNK {
			throw ToolError(
				"The file \(file.path) is a symbolic link, and root never follows or replaces a link in a system "
					+ "folder; it was left alone, and nothing was written.",
				status: .ioError)
		}
		if !exists, mustExist {
			try missing()
		}
		var values = try read(file)
		let before = values
		try change(&values)
		if Defaults.PropertyList.isEqual(before, values) && exists {
			return
		}
		let data = XMLFormat.document(values)
		guard let written = try? PropertyListFile.decode(data), Defaults.PropertyList.isEqual(written, values) else {
			throw .badValue(
				"The file \(file.path) holds a value an XML property list would not keep exactly (a date finer than a "
					+ "second); nothing was written.")
		}
		let mode = exists ? mode_t(status.st_mode) & 0o777 : 0o644
		if let problem = file.replaceBesideFile(with: data, mode: mode) {
			throw ToolError(problem + " Nothing was written.", status: .ioError)
		}
	}

	/// The values of `file`, read where it is named, never through a link.
	private static func read(_ file: SettingsFile) throws(ToolError) -> [String: Any] {
		switch file.readBesideFile() {
		case .missing:
			return [:]
		case .bytes(let data) where data.isEmpty:
			return [:]
		case .bytes(let data):
			do {
				return try PropertyListFile.decode(data)
			} catch {
				throw .badValue(
					"The file \(file.path) is corrupt: \(error). It was left untouched; fix it or move it away; nothing "
						+ "was written.")
			}
		case .refused(let reason):
			throw ToolError("The file \(file.path) is left alone: \(reason); nothing was written.", status: .ioError)
		}
	}

	/// Opens and locks `folder` (a `flock` on the folder itself, which creates nothing in it), waiting at most
	/// ``lockWaitLimit``; returns the descriptor to close.
	private static func lockFolder(_ folder: String) throws(ToolError) -> Int32 {
		let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
		guard descriptor >= 0 else {
			let reason = errno == ENOENT ? "it does not exist" : String(cString: strerror(errno))
			throw ToolError(
				"The folder \(folder) cannot be opened: \(reason); root creates no system folder, so nothing was "
					+ "written.",
				status: .ioError)
		}
		let deadline = Date().addingTimeInterval(lockWaitLimit)
		while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
			guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
				close(descriptor)
				throw ToolError(
					"The folder \(folder) stayed locked by another run of defaults -system; nothing was written.",
					status: .ioError)
			}
			usleep(10_000)
		}
		return descriptor
	}
}
