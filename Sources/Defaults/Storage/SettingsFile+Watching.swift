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
}

#if os(Linux)
	/// One inotify instance and one thread for every watched settings file of the process.
	///
	/// It watches folders, not files: a write replaces the file by a rename, which would end a watch on the file. A
	/// folder that is moved away or removed ends its watch; the folder's path is then watched again as soon as a
	/// folder is there (checked every second), and everything watched in it is told that its file may have changed.
	final class InotifyWatcher: Sendable {
		static let shared: InotifyWatcher? = InotifyWatcher()

		/// What to call when a file of a folder changes, by file name.
		typealias Calls = [String: [@Sendable () -> Void]]

		/// A watched folder: its path, to watch it again when the watch ends, and its files.
		private struct Folder {
			let path: String
			var calls: Calls
		}

		private let descriptor: Int32
		/// Watch descriptor to the folder it watches.
		private let folders = LockedState<[Int32: Folder]>([:])

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
			let calls = [(file.path as NSString).lastPathComponent: [onChange]]
			if add(file.folderPath, calls) {
				return true
			}
			guard errno == ENOENT else {
				return false
			}
			// The store creates the folder at its first write; whoever else creates it is heard too.
			watchLater(file.folderPath, calls)
			return true
		}

		/// Watches the folder at `path` for `calls`; `false`, with `errno` set, when it cannot be watched.
		private func add(_ path: String, _ calls: Calls) -> Bool {
			// Watching a folder twice returns the same watch descriptor.
			let watchDescriptor = inotify_add_watch(descriptor, path, Self.eventMask)
			guard watchDescriptor >= 0 else {
				return false
			}
			folders.withLock { folders in
				var folder = folders[watchDescriptor] ?? Folder(path: path, calls: [:])
				folder.calls.merge(calls) { old, new in old + new }
				folders[watchDescriptor] = folder
			}
			return true
		}

		/// Watches the folder at `path` once there is one, then calls every call: its files may have been written
		/// while nothing watched them.
		private func watchLater(_ path: String, _ calls: Calls) {
			// Out of descriptors, Dispatch would trap: the store then hears of changes at its flushes only.
			guard DispatchStart.isStarted else {
				return
			}
			DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .seconds(1)) { [self] in
				guard add(path, calls) else {
					watchLater(path, calls)
					return
				}
				calls.values.joined().forEach { $0() }
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
			if !add(folder.path, folder.calls) {
				watchLater(folder.path, folder.calls)
			}
			return Array(folder.calls.values.joined())
		}

		private func readEvents() {
			let headerSize = MemoryLayout<inotify_event>.size
			var buffer = [UInt8](repeating: 0, count: 64 * 1024)
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
