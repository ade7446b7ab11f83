import Dispatch
import Foundation
import Synchronization

#if os(Linux)
	import Glibc
#endif

extension SettingsFile {
	/// Calls `onChange` soon after the file may have changed: it was written, replaced, created or removed, by any
	/// process. On Linux an inotify watch on the file's folder (a rename replaces the file, which would end a watch
	/// on the file itself); elsewhere, or when the folder cannot be watched, a check of the file's identity every
	/// second. Calls may be spurious; compare what you read.
	///
	/// The watch lasts as long as the process, across the folder being moved away, removed or made again.
	package func watch(onChange: @escaping @Sendable () -> Void) {
		#if os(Linux)
			if let watcher = InotifyWatcher.shared, watcher.watch(self, onChange: onChange) {
				return
			}
		#endif
		PollingWatcher.watch(self, onChange: onChange)
	}

	/// Calls `onChange` soon after any of `files` may have changed, with one watch per folder however many of the
	/// files it holds (the system-wide defaults and the locks beside them).
	package static func watch(_ files: [SettingsFile], onChange: @escaping @Sendable () -> Void) {
		var byFolder: [String: [SettingsFile]] = [:]
		var folders: [String] = []
		for file in files {
			if byFolder[file.folderPath] == nil {
				folders.append(file.folderPath)
			}
			byFolder[file.folderPath, default: []].append(file)
		}
		for folder in folders {
			let inFolder = byFolder[folder]!
			#if os(Linux)
				if let watcher = InotifyWatcher.shared,
					watcher.watch(folder: folder, names: inFolder.map(\.fileName), onChange: onChange)
				{
					continue
				}
			#endif
			inFolder.forEach { PollingWatcher.watch($0, onChange: onChange) }
		}
	}
}

#if os(Linux)
	/// One inotify instance and one thread for every watched settings file of the process.
	///
	/// It watches folders, not files: a write replaces the file by a rename, which would end a watch on the file. A
	/// folder that is missing, or is moved away or removed, is waited for through a watch of the nearest folder above
	/// it that exists (checked every second only when none can be watched); once it is there it is watched, and
	/// everything watched in it is told that its file may have changed.
	final class InotifyWatcher: Sendable {
		static let shared: InotifyWatcher? = InotifyWatcher()

		/// What to call when a file of a folder changes, by file name.
		typealias Calls = [String: [@Sendable () -> Void]]

		/// A watched folder: its path, to watch it again when the watch ends, its files, and the missing folders
		/// below it that are waited for here (by path, with the calls of their files).
		private struct Folder {
			let path: String
			var calls: Calls
			var awaited: [String: Calls] = [:]
		}

		private let descriptor: Int32
		/// Watch descriptor to the folder it watches.
		private let folders = LockedState<[Int32: Folder]>([:])
		/// The folders checked every second because no folder above them could be watched, with how many waits each.
		private let polled = LockedState<[String: Int]>([:])

		private static let eventMask = UInt32(
			IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE | IN_MOVE_SELF)

		private init?() {
			descriptor = movedAboveStandardStreams(inotify_init1(Int32(IN_CLOEXEC)))
			guard descriptor >= 0 else {
				return nil
			}
			let thread = Thread { [self] in
				readEvents()
			}
			thread.name = "Defaults.FileStore watcher"
			thread.start()
		}

		/// Starts watching the folder of `file`, or waits for the folder to exist; `false` if it cannot be watched.
		func watch(_ file: SettingsFile, onChange: @escaping @Sendable () -> Void) -> Bool {
			watch(folder: file.folderPath, names: [file.fileName], onChange: onChange)
		}

		/// Starts watching the files named `names` in `folder`, or waits for the folder to exist; `false` if it
		/// cannot be watched.
		func watch(folder: String, names: [String], onChange: @escaping @Sendable () -> Void) -> Bool {
			var calls: Calls = [:]
			for name in names {
				calls[name, default: []].append(onChange)
			}
			if add(folder, calls) {
				return true
			}
			guard errno == ENOENT || errno == ENOTDIR else {
				return false
			}
			// The store creates the folder at its first write; whoever else creates it is heard too.
			waitForFolder(folder, calls)
			return true
		}

		/// How many waits for the folder at `path` are made by checking every second (for tests).
		func pollCount(ofFolder path: String) -> Int {
			polled.withLock { $0[path] ?? 0 }
		}

		/// Whether the folder at `path` is watched, for its files or for a folder awaited below it (for tests).
		func isWatching(folder path: String) -> Bool {
			folders.withLock { $0.values.contains { $0.path == path } }
		}

		/// How many calls wait for the folder at `path` through a watch of a folder above it (for tests).
		func awaitingCallCount(ofFolder path: String) -> Int {
			folders.withLock { folders in
				folders.values.reduce(0) { $0 + ($1.awaited[path]?.values.reduce(0) { $0 + $1.count } ?? 0) }
			}
		}

		/// Waits for the missing folder at `path`: watches the nearest folder above it that exists, and tries
		/// `path` again whenever the name leading to it changes there.
		private func waitForFolder(_ path: String, _ calls: Calls) {
			var above = (path as NSString).deletingLastPathComponent
			while true {
				// Added under the lock that drops a watch no longer needed, so that it is never dropped between the
				// two.
				let watchDescriptor = folders.withLock { folders in
					let watchDescriptor = inotify_add_watch(descriptor, above, Self.eventMask)
					if watchDescriptor >= 0 {
						var folder = folders[watchDescriptor] ?? Folder(path: above, calls: [:])
						folder.awaited[path, default: [:]].merge(calls) { old, new in old + new }
						folders[watchDescriptor] = folder
					}
					return watchDescriptor
				}
				if watchDescriptor >= 0 {
					// Made before the watch began, no event tells of it: whoever takes the wait back tries again.
					if access(path, F_OK) == 0, let taken = takeAwaited(path, from: watchDescriptor) {
						retry(path, taken).forEach { $0() }
					}
					return
				}
				guard errno == ENOENT || errno == ENOTDIR, above != "/", !above.isEmpty else {
					watchLater(path, calls)
					return
				}
				above = (above as NSString).deletingLastPathComponent
			}
		}

		/// Takes the wait for `path` off the folder of `watchDescriptor`; `nil` if another thread took it first.
		private func takeAwaited(_ path: String, from watchDescriptor: Int32) -> Calls? {
			folders.withLock { folders in
				defer { dropIfUnneeded(watchDescriptor, in: &folders) }
				return folders[watchDescriptor]?.awaited.removeValue(forKey: path)
			}
		}

		/// Stops watching the folder of `watchDescriptor` when nothing is watched in it or waited for through it any
		/// more: a folder above a missing one, once that one is there, so that the process holds only the watches
		/// it needs (each counts against `max_user_watches`) and an event there wakes nobody.
		private func dropIfUnneeded(_ watchDescriptor: Int32, in folders: inout [Int32: Folder]) {
			guard let folder = folders[watchDescriptor], folder.calls.isEmpty, folder.awaited.isEmpty else {
				return
			}
			folders[watchDescriptor] = nil
			// Its `IN_IGNORED` then finds no folder, and is left alone.
			inotify_rm_watch(descriptor, watchDescriptor)
		}

		/// Watches the folder at `path` that was waited for, else waits again; returns the calls to make when it is
		/// watched now (its files may have been written while nothing watched them).
		private func retry(_ path: String, _ calls: Calls) -> [@Sendable () -> Void] {
			if add(path, calls) {
				return Array(calls.values.joined())
			}
			if errno == ENOENT || errno == ENOTDIR {
				waitForFolder(path, calls)
			} else {
				watchLater(path, calls)
			}
			return []
		}

		/// Tries again the folders waited for in the folder of `watchDescriptor` that the entry `name` leads to
		/// (every one for `nil`).
		private func retryAwaited(in watchDescriptor: Int32, name: String?) -> [@Sendable () -> Void] {
			let taken = folders.withLock { folders -> [String: Calls] in
				guard let folder = folders[watchDescriptor], !folder.awaited.isEmpty else {
					return [:]
				}
				let prefix = (folder.path.hasSuffix("/") ? folder.path : folder.path + "/")
				var taken: [String: Calls] = [:]
				for (path, calls) in folder.awaited {
					let next = path.hasPrefix(prefix) ? path.dropFirst(prefix.count).prefix { $0 != "/" } : ""
					if let name, next != name[...] {
						continue
					}
					taken[path] = calls
					folders[watchDescriptor]!.awaited.removeValue(forKey: path)
				}
				dropIfUnneeded(watchDescriptor, in: &folders)
				return taken
			}
			return taken.flatMap { retry($0.key, $0.value) }
		}

		/// Watches the folder at `path` for `calls`; `false`, with `errno` set, when it cannot be watched.
		private func add(_ path: String, _ calls: Calls) -> Bool {
			// Watching a folder twice returns the same watch descriptor; under the lock that drops one no longer
			// needed, so that it is never dropped between the two.
			folders.withLock { folders in
				let watchDescriptor = inotify_add_watch(descriptor, path, Self.eventMask)
				guard watchDescriptor >= 0 else {
					return false
				}
				var folder = folders[watchDescriptor] ?? Folder(path: path, calls: [:])
				folder.calls.merge(calls) { old, new in old + new }
				folders[watchDescriptor] = folder
				return true
			}
		}

		/// Watches the folder at `path` once there is one, then calls every call: its files may have been written
		/// while nothing watched them.
		private func watchLater(_ path: String, _ calls: Calls) {
			// Out of descriptors, Dispatch would trap: the store then hears of changes at its flushes only.
			guard DispatchStart.isStarted else {
				return
			}
			polled.withLock { $0[path, default: 0] += 1 }
			DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .seconds(1)) { [self] in
				polled.withLock { polled in
					polled[path]! -= 1
					if polled[path] == 0 {
						polled[path] = nil
					}
				}
				retry(path, calls).forEach { $0() }
			}
		}

		/// Watches a folder whose watch ended (`IN_IGNORED`: removed) or no longer names its path (`IN_MOVE_SELF`)
		/// again at its path.
		private func watchAgain(_ watchDescriptor: Int32) -> [@Sendable () -> Void] {
			guard let folder = folders.withLock({ $0.removeValue(forKey: watchDescriptor) }) else {
				return []
			}
			// A moved folder is still watched where it went; its events are no longer this path's.
			inotify_rm_watch(descriptor, watchDescriptor)
			var calls = Array(folder.calls.values.joined())
			if !folder.calls.isEmpty {
				// Its files are told below whether or not the folder is back.
				_ = retry(folder.path, folder.calls)
			}
			// What waited here waits at the nearest folder that is left.
			for (path, awaited) in folder.awaited {
				calls += retry(path, awaited)
			}
			return calls
		}

		private func readEvents() {
			let headerSize = MemoryLayout<inotify_event>.size
			// Room for 16 events of the longest name (a 16-byte header and 256 bytes): a read takes the whole events that
			// fit and leaves the rest queued in the kernel for the next, so a larger buffer only saves reads in a burst.
			// It was 64 KB, zeroed, so resident: a quarter of an empty store's fixed cost (issue 32).
			var buffer = [UInt8](repeating: 0, count: 16 * (headerSize + Int(NAME_MAX) + 1))
			while true {
				let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
				guard count > 0 else {
					if count < 0, errno == EINTR {
						continue
					}
					return
				}
				// Per folder and name, so that a burst of events for one file makes one call.
				var changed: [String: [@Sendable () -> Void]] = [:]
				var ended: Set<Int32> = []
				buffer.withUnsafeBytes { bytes in
					var offset = 0
					while offset + headerSize <= count {
						let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
						let nameStart = offset + headerSize
						let nameEnd = min(nameStart + Int(event.len), count)
						offset = nameEnd
						if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
							// Events were lost: any file may have changed.
							for (descriptor, folder) in folders.withLock({ $0 }) {
								for (name, calls) in folder.calls { changed["\(descriptor)/\(name)"] = calls }
								changed["\(descriptor)//awaited"] = retryAwaited(in: descriptor, name: nil)
							}
							continue
						}
						if event.mask & UInt32(IN_IGNORED | IN_MOVE_SELF) != 0 {
							ended.insert(event.wd)
							continue
						}
						let name = String(decoding: bytes[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
						if let calls = folders.withLock({ $0[event.wd]?.calls[name] }) {
							changed["\(event.wd)/\(name)"] = calls
						}
						if event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
							let made = retryAwaited(in: event.wd, name: name)
							if !made.isEmpty {
								changed["\(event.wd)//\(name)"] = made
							}
						}
					}
				}
				for watchDescriptor in ended {
					changed["\(watchDescriptor)/"] = watchAgain(watchDescriptor)
				}
				for call in changed.values.joined() {
					call()
				}
			}
		}
	}
#endif

/// Checks a file's identity every second where the platform gives no cheaper change signal.
enum PollingWatcher {
	private static let timers = LockedState<[any DispatchSourceTimer]>([])

	static func watch(_ file: SettingsFile, onChange: @escaping @Sendable () -> Void) {
		// Out of descriptors, Dispatch would trap: the store then hears of changes at its flushes only.
		guard DispatchStart.isStarted else {
			return
		}
		let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
		let lastIdentity = LockedState<FileIdentity?>(file.identity)
		timer.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1), leeway: .milliseconds(250))
		timer.setEventHandler {
			// A `stat` of the file; the caller reads it only when it changed.
			let identity = file.identity
			let isChanged = lastIdentity.withLock { last in
				defer { last = identity }
				return last != identity
			}
			if isChanged {
				onChange()
			}
		}
		timer.resume()
		timers.withLock { $0.append(timer) }
	}
}
