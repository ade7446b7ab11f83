import Foundation
import Synchronization

extension Defaults {
	/// A store kept in a property-list file: the default store on Linux.
	///
	/// Reads come from memory. Writes update memory at once and reach the disk shortly after (within about 100 ms,
	/// coalesced), at ``flush()``, and when the process exits normally. A flush writes a temporary file, syncs it
	/// and renames it over the old one, so the file is always whole, even when a process is killed while writing.
	/// Several processes can share a file: each flush takes a lock, re-reads the file if another process changed
	/// it and writes only this process's changed keys on top, so no process loses another's updates. Changes made
	/// by other processes show up within moments: the store watches its file.
	///
	/// The file is a binary property list, which keeps dates exact to the sub-second and which Foundation's
	/// `UserDefaults` reads. Files in XML, binary and OpenStep format written by others are read. A file that is not
	/// a property list is moved aside with its bytes intact (`<name>.plist.corrupt-<timestamp>`), the problem is
	/// reported as a ``Defaults/Failure``, and the store starts empty.
	///
	/// Each file maps to one store per process, so that there is one in-memory state per file:
	///
	/// ```swift
	/// // `$XDG_CONFIG_HOME/<executable name>.plist`, else `~/.config/<executable name>.plist`:
	/// // the file `UserDefaults.standard` uses.
	/// let standard = Defaults.FileStore.standard
	///
	/// // `group.plist` beside it.
	/// let group = try Defaults.FileStore.suite(named: "group")
	/// let volume = Defaults.Key<Int>("volume", default: 5, suite: group)
	/// group[volume] = 7
	///
	/// // Any file.
	/// let local = Defaults.FileStore.at(URL(filePath: "/var/lib/app/settings.plist"))
	/// ```
	///
	/// Values are looked up in layers, like `UserDefaults` domains: values an administrator locked, then (for the
	/// ``standard`` file) `-key value` pairs of the launch arguments, then the stored values, then system-wide defaults
	/// in `$XDG_CONFIG_DIRS`, then registered defaults. Locks and system-wide defaults belong to the files of the
	/// configuration folder, `$XDG_CONFIG_HOME` else `~/.config` (``standard``, suites, and those files opened with
	/// ``at(_:)``), whichever opener comes first; a file elsewhere reads its stored values and registered defaults
	/// only. Only stored values are written: a write of a key that a launch argument sets reaches the file, and the
	/// argument still wins for reads in that run; a write of a locked key changes nothing and is reported as a
	/// ``Defaults/Failure``.
	public final class FileStore: Store, CountsItsOwnChanges, HoldsItsAttachments, Sendable {
		/// The property-list file the store lives in.
		public let url: URL
		/// The store's runtime, kept here rather than in a table: see `StoreAttachments`.
		let attachments = StoreAttachments()
		/// The file on disk: reading, the lock, atomic replacement, corrupt files.
		let file: SettingsFile

		/// What readers and writers share; every access is brief and does no I/O.
		struct Memory {
			/// The stored values: the file as last read or written, with this process's pending changes on top.
			var values: [String: Any] = [:] {
				didSet { changed() }
			}
			/// The layers read above the stored values (locked values over launch arguments over environment variables),
			/// folded into one lookup; empty when there are none, so that a read without them costs what it did before
			/// layers (see `FileStore+Layers.swift`).
			var above: [String: Any] = [:] {
				didSet { changed() }
			}
			/// The layers read beneath the stored values (system-wide defaults over registered defaults), folded into
			/// one lookup.
			var beneath: [String: Any] = [:] {
				didSet { changed() }
			}
			/// Advanced inside the lock and after the change: every path that changes what reads see (writes, reloads
			/// of changes from other processes, registration, launch arguments) goes through `values`, `above` or
			/// `beneath`, also when the store's primitives are called past the package.
			let changeCounter: Defaults.ChangeCounter
			var registered: [String: Any] = [:]
			/// The launch-argument domain (`FileStore+Layers.swift`).
			var arguments: [String: Any] = [:]
			/// The values of the environment variables the app asked for (``readEnvironment(prefix:)``), and the
			/// variable that gave each.
			var environment: [String: Any] = [:]
			var environmentBy: [String: String] = [:]
			/// The system-wide defaults: the files of `systemFiles`, the first one's value of a key winning.
			var system: [String: Any] = [:]
			/// The file that gave each system-wide default, for ``Defaults/layer(of:)``.
			var systemBy: [String: String] = [:]
			/// The values an administrator locked (`lockFiles`, the first one's value of a key winning), and the file
			/// that locked each, for messages.
			var locked: [String: Any] = [:]
			var lockedBy: [String: String] = [:]
			/// The last problem reported for each system file, so that a file refused again is not reported again.
			var systemProblems: [String: String] = [:]
			/// Keys this process set or removed since the last flush: the only keys a flush writes.
			private(set) var dirtyKeys: Set<String> = []
			/// The key marked dirty last, while it is still in `dirtyKeys`: a key written again and again between
			/// flushes (a slider, a counter) is found dirty with one string comparison instead of a second hashing of
			/// its name per write.
			private var lastDirtyKey: String?
			var isFlushScheduled = false
			var isReloadScheduled = false
			/// Flushes that failed in a row: the next try waits longer, up to a minute.
			var failedFlushes = 0

			init(changeCounter: Defaults.ChangeCounter) {
				self.changeCounter = changeCounter
			}

			private mutating func changed() {
				changeCounter.advance()
			}
		}

		let memory: LockedState<Memory>
		/// Advanced after every change of a value reads can see, wherever it came from; the store's runtime adopts it.
		let changeCounter: Defaults.ChangeCounter
		/// Held for the whole of a flush or reload, which do I/O, so that readers never wait for the disk.
		let disk: LockedState<DiskState>
		/// The files of system-wide defaults, in the order of `$XDG_CONFIG_DIRS` (`FileStore+Layers.swift`); read,
		/// never written.
		let systemFiles: [SettingsFile]
		/// The files of locked values (`<name>.locks.plist` beside each of `systemFiles`); read, never written.
		let lockFiles: [SettingsFile]
		/// The thread whose reads see the user's own values only, no layer above or beneath them (a migration's, which
		/// moves the user's values beneath the locks: `readOwnValuesOnly(onThread:)`), else 0.
		let threadReadingOwnValues = Atomic<UInt>(0)

		/// - Parameter systemFileName: the name of the system files in `systemFolders` (see
		///   `FileStoreRegistry.layers(of:)`), and of the locks beside them; the file's own name when `nil`.
		init(
			file: SettingsFile, systemFolders: [URL] = [], systemFileName: String? = nil,
			failures: inout [Defaults.Failure]
		) {
			self.url = URL(filePath: file.path, directoryHint: .notDirectory)
			self.file = file
			let systemFileName = systemFileName ?? file.fileName
			self.systemFiles = systemFolders.map { SettingsFile(url: $0.appending(path: systemFileName)) }
			self.lockFiles = systemFolders.map {
				SettingsFile(url: $0.appending(path: Self.lockFileName(forFileNamed: systemFileName)))
			}
			self.changeCounter = Defaults.ChangeCounter()
			self.memory = LockedState(Memory(changeCounter: changeCounter))
			self.disk = LockedState(DiskState())
			load(failures: &failures)
			loadSystemLayer(failures: &failures)
		}

		/// The store in `$XDG_CONFIG_HOME/<executable name>.plist`, else `~/.config/<executable name>.plist`.
		///
		/// It is the file Foundation's `UserDefaults.standard` uses on Linux, so values an app stored with
		/// `UserDefaults` read here, and `UserDefaults` reads what this store writes. Launch arguments of the form
		/// `-key value` are read above the stored values, for that run only (see ``Defaults/FileStore``).
		public static let standard: FileStore = FileStoreRegistry.store(at: standardURL)

		/// The store named `name`: the file `<name>.plist` in the standard store's folder.
		///
		/// The folder is `$XDG_CONFIG_HOME`, else `~/.config`, as for `UserDefaults(suiteName:)`.
		///
		/// ```swift
		/// let group = try Defaults.FileStore.suite(named: "com.example.group")
		/// ```
		///
		/// - Throws: ``InvalidSuiteName`` when `name` is empty, would leave the folder (`/`, `.`, `..`) or is longer than
		///   220 bytes of UTF-8 (beside `<name>.plist` the store makes a lock file, temporary files and, for a corrupt
		///   file, a copy with a timestamp, all within the 255 bytes a file name may have).
		public static func suite(named name: String) throws(InvalidSuiteName) -> FileStore {
			try suite(named: name, in: configurationDirectory())
		}

		static func suite(named name: String, in directory: URL) throws(InvalidSuiteName) -> FileStore {
			FileStoreRegistry.store(at: try url(forSuiteNamed: name, in: directory))
		}

		/// The folder the standard store and named suites live in: `$XDG_CONFIG_HOME` if set to an absolute path,
		/// else `~/.config`, as for Foundation's `UserDefaults` on Linux. (A program reads it from
		/// `standard.url`; the `defaults` command and the tests name it.)
		package static var directory: URL {
			configurationDirectory()
		}

		/// The file the suite named `name` lives in, found without opening (or creating) it.
		///
		/// ```swift
		/// let file = try Defaults.FileStore.url(forSuiteNamed: "editor")  // ~/.config/editor.plist
		/// ```
		///
		/// - Throws: ``InvalidSuiteName`` when `name` is empty, would leave the folder (`/`, `.`, `..`) or is longer than
		///   ``maximumSuiteNameBytes``. (For the `defaults` command; a program opens the store and reads its `url`.)
		package static func url(forSuiteNamed name: String) throws(InvalidSuiteName) -> URL {
			try url(forSuiteNamed: name, in: directory)
		}

		static func url(forSuiteNamed name: String, in directory: URL) throws(InvalidSuiteName) -> URL {
			try InvalidSuiteName.check(name)
			return directory.appending(path: name + ".plist", directoryHint: .notDirectory)
		}

		/// The store of the property-list file at `url`; the same file always gives the same store.
		///
		/// Opening and reading create nothing: the file, and its folder if it is missing, are created at the first
		/// write.
		///
		/// ```swift
		/// let store = Defaults.FileStore.at(URL(filePath: "/var/lib/app/settings.plist"))
		/// ```
		public static func at(_ url: URL) -> FileStore {
			FileStoreRegistry.store(at: url)
		}

		/// The longest suite name, in bytes of UTF-8, that ``suite(named:)`` accepts: 220.
		///
		/// File systems hold names of at most 255 bytes, and beside `<name>.plist` the store makes
		/// `.<name>.plist.lock`, temporary files `.<name>.plist.tmp-<process>-<random>` and, for a corrupt file,
		/// `<name>.plist.corrupt-<timestamp>`: a longer name could be read but never written.
		///
		/// ```swift
		/// let name = String(repeating: "a", count: Defaults.FileStore.maximumSuiteNameBytes + 1)
		/// // throws InvalidSuiteName:
		/// _ = try? Defaults.FileStore.suite(named: name)
		/// ```
		package static let maximumSuiteNameBytes = 220

		/// A suite name that cannot name a file in the configuration folder.
		public struct InvalidSuiteName: Error, Sendable, CustomStringConvertible {
			/// The refused name (the caller gave it; the ``description`` names it).
			package let suiteName: String
			/// Why it is refused, as the end of the ``description``'s sentence.
			package let reason: String

			/// The name and the reason, as one sentence.
			public var description: String {
				"The suite name \"\(suiteName)\" is refused: \(reason)."
			}

			static func check(_ name: String) throws(InvalidSuiteName) {
				if name.isEmpty {
					throw InvalidSuiteName(suiteName: name, reason: "it is empty")
				}
				if name == "." || name == ".." {
					throw InvalidSuiteName(suiteName: name, reason: "it names a folder, not a file")
				}
				if name.contains("/") {
					throw InvalidSuiteName(
						suiteName: name, reason: "it contains \"/\", so the file would leave the configuration folder")
				}
				if name.contains("\0") {
					throw InvalidSuiteName(suiteName: name, reason: "it contains a NUL character")
				}
				if name.utf8.count > maximumSuiteNameBytes {
					throw InvalidSuiteName(
						suiteName: name,
						reason:
							"it takes \(name.utf8.count) bytes of UTF-8, and a suite name may take at most "
							+ "\(maximumSuiteNameBytes) so that its file's lock and temporary files fit the file system's "
							+ "255-byte names")
				}
			}
		}

		// MARK: Store

		/// The launch-argument value for `key`, else its stored value, else its registered default.
		public func storedValue(forKey key: String) -> Any? {
			memory.withLock { memory in
				// Checked first so that a store without such layers hashes the name no more than before.
				if !memory.above.isEmpty, let value = memory.above[key], !isReadingOwnValuesOnly {
					return value
				}
				if let value = memory.values[key] {
					return value
				}
				// A migration moves the user's own values: a system-wide or registered default it read and wrote back
				// would pin that default in the user's file.
				return memory.beneath.isEmpty || isReadingOwnValuesOnly ? nil : memory.beneath[key]
			}
		}

		/// Stores `value` for `key` in memory at once; it reaches the file within about 100 ms.
		public func setStoredValue(_ value: Any, forKey key: String) {
			// The common write, not through `store`: wrapping the value in an optional and unwrapping it again copied
			// it twice more through its type's value witnesses.
			var lockFile: String?
			let shouldSchedule = memory.withLock { memory -> Bool? in
				guard TerminationFlush.acceptsWrites else {
					return nil
				}
				if !memory.locked.isEmpty, let file = memory.lockedBy[key] {
					lockFile = file
					return false
				}
				memory.values[key] = value
				memory.markDirty(key)
				return memory.markFlushScheduled()
			}
			finishWrite(ofKey: key, shouldSchedule: shouldSchedule, lockFile: lockFile)
		}

		/// Removes the stored value for `key`; the file forgets it within about 100 ms.
		public func removeStoredValue(forKey key: String) {
			store(nil, forKey: key, beneathLocks: false)
		}

		/// Stores `value` (removes the stored value for `nil`); a locked key is refused and reported unless
		/// `beneathLocks`, which stores the user's value beneath the lock (sync's remote values, migrations).
		func store(_ value: Any?, forKey key: String, beneathLocks: Bool) {
			var lockFile: String?
			let shouldSchedule = memory.withLock { memory -> Bool? in
				guard TerminationFlush.acceptsWrites else {
					return nil
				}
				// One check of a count when nothing is locked.
				if !beneathLocks, !memory.locked.isEmpty, let file = memory.lockedBy[key] {
					lockFile = file
					return false
				}
				if let value {
					memory.values[key] = value
				} else {
					memory.values.removeValue(forKey: key)
				}
				memory.markDirty(key)
				return memory.markFlushScheduled()
			}
			finishWrite(ofKey: key, shouldSchedule: shouldSchedule, lockFile: lockFile)
		}

		/// After a write's lock: waits for the end after a terminating signal (`nil`), reports a locked key, schedules
		/// the flush.
		@inline(__always)
		private func finishWrite(ofKey key: String, shouldSchedule: Bool?, lockFile: String?) {
			guard let shouldSchedule else {
				TerminationFlush.waitForTheEnd()
			}
			if let lockFile {
				reportLockedWrite(of: key, lockedBy: lockFile)
			}
			if shouldSchedule {
				scheduleFlush()
			}
		}

		/// Registers defaults for this store, read when neither a launch-argument nor a stored value exists.
		///
		/// Unlike `UserDefaults` on Linux, registered defaults belong to this store only, and are never written.
		public func registerDefaultValues(_ values: [String: Any]) {
			memory.withLock { memory in
				// Key by key: keys register one at a time, and rebuilding the layers each time would be quadratic.
				for (key, value) in values {
					memory.registered[key] = value
					if memory.system[key] == nil {
						memory.beneath[key] = value
					}
				}
			}
		}

		/// The keys with a stored value (launch arguments and registered defaults excluded).
		public func storedKeys() -> [String] {
			memory.withLock { Array($0.values.keys) }
		}

		/// The default registered for `key`, whatever the layers above it hold.
		package func registeredValue(forKey key: String) -> Any? {
			memory.withLock { $0.registered[key] }
		}

		/// Every stored value (launch arguments and registered defaults excluded). For the package's tests and tools:
		/// a program reads the names with `storedKeys()` and each value with `storedValue(forKey:)`.
		package var dictionaryRepresentation: [String: Any] {
			memory.withLock { $0.values }
		}

		/// Flushes soon, so that a burst of writes costs one file write.
		func scheduleFlush() {
			FileStoreRegistry.installExitFlush()
			guard DispatchStart.isStarted else {
				// Out of descriptors, Dispatch would trap: the changes wait for the next write, `flush()` or exit.
				memory.withLock { $0.isFlushScheduled = false }
				return
			}
			DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + FileStore.flushDelay) { [self] in
				flush()
			}
		}

		/// Tries a failed flush again later, waiting longer after each failure in a row (1 s, 2 s, … up to 60 s), so
		/// that changes reach the file once it can be written again, without anyone having to write or flush.
		func scheduleRetry() {
			// Out of descriptors, Dispatch would trap: the changes wait for the next write, `flush()` or exit. A process
			// that is ending tries each store once more, and no later.
			guard DispatchStart.isStarted, !TerminationFlush.isEnding.load(ordering: .sequentiallyConsistent) else {
				return
			}
			let delay = memory.withLock { memory -> Int? in
				guard !memory.dirtyKeys.isEmpty, memory.markFlushScheduled() else {
					return nil
				}
				memory.failedFlushes += 1
				return min(60, 1 << min(memory.failedFlushes - 1, 6))
			}
			guard let delay else {
				return
			}
			DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .seconds(delay)) { [self] in
				flush()
			}
		}

		/// How long a write waits for others to join it before the file is written.
		static let flushDelay = DispatchTimeInterval.milliseconds(100)
	}
}

extension Defaults.FileStore.Memory {
	/// Adds `key` to the keys the next flush writes.
	mutating func markDirty(_ key: String) {
		guard key != lastDirtyKey else {
			return
		}
		dirtyKeys.insert(key)
		lastDirtyKey = key
	}

	/// Adds `keys` to the keys the next flush writes.
	mutating func markDirty(_ keys: some Sequence<String>) {
		dirtyKeys.formUnion(keys)
	}

	/// Takes `key` out of the keys the next flush writes: an atomic update has written it to the file itself.
	mutating func markClean(_ key: String) {
		dirtyKeys.remove(key)
		if lastDirtyKey == key {
			lastDirtyKey = nil
		}
	}

	/// Forgets the dirty keys, once a flush has taken them.
	mutating func clearDirtyKeys() {
		// The capacity stays for the next writes (a write that grows the set allocates), unless a burst of writes made
		// it large: a store that wrote 100,000 keys once would keep their table (4 MB) for good.
		dirtyKeys.removeAll(keepingCapacity: dirtyKeys.capacity <= 1_024)
		lastDirtyKey = nil
	}

	/// Takes the keys the next flush writes, and forgets them as ``clearDirtyKeys()`` does: the set itself when a burst
	/// of writes made it large (no copy of its names), else a copy, so that the set keeps its small capacity.
	mutating func takeDirtyKeys() -> Set<String> {
		lastDirtyKey = nil
		guard dirtyKeys.capacity <= 1_024 else {
			defer { dirtyKeys = [] }
			return dirtyKeys
		}
		var taken = Set<String>(minimumCapacity: dirtyKeys.count)
		taken.formUnion(dirtyKeys)
		dirtyKeys.removeAll(keepingCapacity: true)
		return taken
	}

	/// Marks a flush as scheduled; `true` when it was not yet, so the caller must schedule it.
	mutating func markFlushScheduled() -> Bool {
		if isFlushScheduled {
			return false
		}
		isFlushScheduled = true
		return true
	}
}
