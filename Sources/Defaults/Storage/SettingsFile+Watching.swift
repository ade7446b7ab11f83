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
	/// The watch lasts as long as the process.
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
	/// It watches folders, not files: a write replaces the file by a rename, which would end a watch on the file.
	final class InotifyWatcher: Sendable {
		static let shared: InotifyWatcher? = InotifyWatcher()

		private let descriptor: Int32
		/// Watch descriptor of a folder, then file name, to what to call when that file changes.
		private let handlers = LockedState<[Int32: [String: [@Sendable () -> Void]]]>([:])

		private static let eventMask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CREATE)

		private init?() {
			descriptor = inotify_init1(Int32(IN_CLOEXEC))
			guard descriptor >= 0 else {
				return nil
			}
			let thread = Thread { [self] in
				readEvents()
			}
			thread.name = "Defaults.FileStore watcher"
			thread.start()
		}

		/// Starts watching the folder of `file`; `false` if the folder cannot be watched.
		func watch(_ file: SettingsFile, onChange: @escaping @Sendable () -> Void) -> Bool {
			// Watching a folder twice returns the same watch descriptor.
			let watchDescriptor = inotify_add_watch(descriptor, file.folderPath, Self.eventMask)
			guard watchDescriptor >= 0 else {
				return false
			}
			let name = (file.path as NSString).lastPathComponent
			handlers.withLock { $0[watchDescriptor, default: [:]][name, default: []].append(onChange) }
			return true
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
				buffer.withUnsafeBytes { bytes in
					var offset = 0
					while offset + headerSize <= count {
						let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
						let nameStart = offset + headerSize
						let nameEnd = min(nameStart + Int(event.len), count)
						offset = nameEnd
						if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
							// Events were lost: any file may have changed.
							for (descriptor, files) in handlers.withLock({ $0 }) {
								for (name, calls) in files { changed["\(descriptor)/\(name)"] = calls }
							}
							continue
						}
						let name = String(decoding: bytes[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
						if let calls = handlers.withLock({ $0[event.wd]?[name] }) {
							changed["\(event.wd)/\(name)"] = calls
						}
					}
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
