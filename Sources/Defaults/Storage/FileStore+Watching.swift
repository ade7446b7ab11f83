import Dispatch
import Foundation
import Synchronization

#if os(Linux)
	import Glibc
#endif

extension Defaults.FileStore {
	/// Reloads the file soon; many change events in a row cost one reload.
	func scheduleReload() {
		let shouldSchedule = memory.withLock { memory in
			defer { memory.isReloadScheduled = true }
			return !memory.isReloadScheduled
		}
		guard shouldSchedule else {
			return
		}
		DispatchQueue.global(qos: .utility).async { [self] in
			// Cleared first, so that a change during the reload schedules another one.
			memory.withLock { $0.isReloadScheduled = false }
			reloadIfChanged()
		}
	}
}

/// Tells file stores when their file may have changed, so that they take in other processes' writes within moments.
enum FileWatcher {
	static func watch(_ store: Defaults.FileStore) {
		#if os(Linux)
			if let watcher = InotifyWatcher.shared, watcher.watch(store) {
				return
			}
		#endif
		PollingWatcher.watch(store)
	}
}

#if os(Linux)
	/// One inotify instance and one thread for every file store of the process.
	///
	/// It watches folders, not files: a write replaces the file by a rename, which would end a watch on the file.
	final class InotifyWatcher: Sendable {
		static let shared: InotifyWatcher? = InotifyWatcher()

		private let descriptor: Int32
		/// Watch descriptor of a folder, then file name, to the store of that file.
		private let stores = Mutex<[Int32: [String: Defaults.FileStore]]>([:])

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

		/// Starts watching the folder of `store`; `false` if the folder cannot be watched.
		func watch(_ store: Defaults.FileStore) -> Bool {
			let folder = store.url.deletingLastPathComponent().path(percentEncoded: false)
			// Watching a folder twice returns the same watch descriptor.
			let watchDescriptor = inotify_add_watch(descriptor, folder, Self.eventMask)
			guard watchDescriptor >= 0 else {
				return false
			}
			stores.withLock { $0[watchDescriptor, default: [:]][store.url.lastPathComponent] = store }
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
				var changed: [ObjectIdentifier: Defaults.FileStore] = [:]
				buffer.withUnsafeBytes { bytes in
					var offset = 0
					while offset + headerSize <= count {
						let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
						let nameStart = offset + headerSize
						let nameEnd = min(nameStart + Int(event.len), count)
						offset = nameEnd
						if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
							// Events were lost: any file may have changed.
							for store in stores.withLock({ $0.values.flatMap(\.values) }) {
								changed[ObjectIdentifier(store)] = store
							}
							continue
						}
						let name = String(decoding: bytes[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
						if let store = stores.withLock({ $0[event.wd]?[name] }) {
							changed[ObjectIdentifier(store)] = store
						}
					}
				}
				for store in changed.values {
					store.scheduleReload()
				}
			}
		}
	}
#endif

/// Checks each file store's file every second where the platform gives no cheaper change signal.
enum PollingWatcher {
	private static let timers = LockedState<[any DispatchSourceTimer]>([])

	static func watch(_ store: Defaults.FileStore) {
		let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
		timer.schedule(deadline: .now() + .seconds(1), repeating: .seconds(1), leeway: .milliseconds(250))
		timer.setEventHandler {
			// A `stat` of the file; the file is read only when it changed.
			store.reloadIfChanged()
		}
		timer.resume()
		timers.withLock { $0.append(timer) }
	}
}
