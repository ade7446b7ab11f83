import Foundation

/// Maps each file to its one store, and flushes every store when the process exits.
enum FileStoreRegistry {
	private static let stores = LockedState<[String: Defaults.FileStore]>([:])

	static func store(at url: URL) -> Defaults.FileStore {
		let resolved = canonicalURL(url)
		var failures: [Defaults.Failure] = []
		let (store, isNew) = stores.withLock { stores in
			if let existing = stores[resolved.path] {
				return (existing, false)
			}
			// Created under the lock so that two threads opening one file cannot end up with two states.
			let store = Defaults.FileStore(url: resolved, failures: &failures)
			stores[resolved.path] = store
			return (store, true)
		}
		// Reported outside the lock: a failure handler may open stores itself.
		failures.forEach(Defaults.report)
		if isNew {
			store.file.watch { [weak store] in store?.scheduleReload() }
		}
		return store
	}

	static func allStores() -> [Defaults.FileStore] {
		stores.withLock { Array($0.values) }
	}

	/// One path per file, whichever way it is spelled: symbolic links resolved, the file's own included, `..` removed.
	///
	/// A settings file that is a link (dotfiles kept in a repository and linked into `~/.config`) is read, locked,
	/// watched and atomically replaced where the link points, so the link stays a link and every process that
	/// reaches the file, through the link or not, shares one lock.
	static func canonicalURL(_ url: URL) -> URL {
		var absolute = url.absoluteURL.standardizedFileURL
		// Bounded like the system's own resolution (ELOOP after 40 links), so that a loop of links ends.
		for _ in 0..<40 {
			let folder = absolute.deletingLastPathComponent().resolvingSymlinksInPath()
			absolute = folder.appending(path: absolute.lastPathComponent, directoryHint: .notDirectory)
			guard let target = symbolicLinkTarget(atPath: absolute.path(percentEncoded: false)) else {
				break
			}
			absolute =
				target.hasPrefix("/")
				? URL(filePath: target, directoryHint: .notDirectory)
				: folder.appending(path: target, directoryHint: .notDirectory).standardizedFileURL
		}
		return absolute
	}

	/// Where the symbolic link at `path` points, as it is written in the link; `nil` when `path` is not a link.
	private static func symbolicLinkTarget(atPath path: String) -> String? {
		var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
		let count = readlink(path, &buffer, buffer.count - 1)
		guard count > 0 else {
			return nil
		}
		return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
	}

	private static let exitFlush: Void = {
		atexit {
			Defaults.FileStore.flushAll()
		}
	}()

	/// Makes the process flush every store when it exits normally or is stopped by a terminating signal left at its
	/// default action: Linux Foundation writes nothing by itself.
	static func installExitFlush() {
		_ = exitFlush
		TerminationFlush.install()
	}
}
