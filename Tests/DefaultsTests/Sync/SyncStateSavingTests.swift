import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// The state file under a burst of watch messages (issue 18): written once for the burst, not once per message, and
/// on disk with the last revision soon after.
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncStateSavingTests {
	#if canImport(Glibc)
		@Test func aBurstOfWatchMessagesWritesTheStateFileAFewTimesNotOnceEach() async throws {
			let folder = try TemporaryDirectory()
			var failures: [Defaults.Failure] = []
			let store = Defaults.FileStore(file: SettingsFile(url: folder.file("app.plist")), failures: &failures)
			let events: [Defaults.RemoteEvent] = try (1...40).map { index in
				.put(
					.init(key: "/p/a", value: try SyncedValueCoding.encode("v\(index)"), modRevision: 10 + Int64(index))
				)
			}
			let remote = OneEventPerMessageRemote(events: events)
			let renames = try RenameCounter(watching: folder.url)
			let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: store)
			engine.add(["a"])
			engine.start()
			defer { engine.stop() }

			let deadline = ContinuousClock.now + .seconds(30)
			while store.storedValue(forKey: "a") as? String != "v40", ContinuousClock.now < deadline {
				try await Task.sleep(for: .milliseconds(20))
			}
			#expect(store.storedValue(forKey: "a") as? String == "v40")
			// The scheduled write, well after its delay.
			var onDisk: Int64 = 0
			while onDisk != 50, ContinuousClock.now < deadline {
				try await Task.sleep(for: .milliseconds(20))
				if case .state(let state) = SyncState.load(from: engine.stateFile) {
					onDisk = state.revision
				}
			}
			#expect(onDisk == 50, "the state on disk has the last message's revision")
			let writes = renames.count(of: "app.plist.sync.json")
			// Under the sanitizer, which slows the engine's steps more than the messages, fewer messages share a step:
			// a whole-suite run saw 7; still far from one write per message.
			#expect(
				writes >= 1 && writes <= 6 * sanitizerSlowdown,
				"\(writes) writes of the state file for 40 watch messages")
		}
	#endif
}

/// A remote whose read answers revision 10 with nothing, and whose watch sends `events` one message each, as etcd
/// does for writes committed one after another, then stays open.
final class OneEventPerMessageRemote: Defaults.RemoteKeyValueService {
	let events: [Defaults.RemoteEvent]

	init(events: [Defaults.RemoteEvent]) {
		self.events = events
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		Defaults.RemoteSnapshot(entries: [], revision: 10)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		.written(revision: 1000)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		1000
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		let events = events.filter { $0.revision >= revision }
		return AsyncThrowingStream { continuation in
			continuation.yield([])
			for event in events {
				continuation.yield([event])
			}
		}
	}
}

#if canImport(Glibc)
	/// Counts the files renamed into a folder, by name, through inotify: each atomic write of a file is one rename.
	final class RenameCounter {
		private let descriptor: Int32

		init(watching folder: URL) throws {
			descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
			guard descriptor >= 0, inotify_add_watch(descriptor, folder.path, UInt32(IN_MOVED_TO)) >= 0 else {
				throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
			}
		}

		deinit {
			close(descriptor)
		}

		/// How many renames onto `name` came since the last call.
		func count(of name: String) -> Int {
			var count = 0
			var buffer = [UInt8](repeating: 0, count: 64 << 10)
			while true {
				let length = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
				guard length > 0 else {
					return count
				}
				var offset = 0
				// Each event: the watch, mask, cookie and name length (4 bytes each), then the name, padded with NULs.
				while offset + 16 <= length {
					let nameLength = buffer[(offset + 12)..<(offset + 16)].withUnsafeBytes {
						Int($0.loadUnaligned(as: UInt32.self))
					}
					let nameBytes = buffer[(offset + 16)..<(offset + 16 + nameLength)].prefix { $0 != 0 }
					if String(decoding: nameBytes, as: UTF8.self) == name {
						count += 1
					}
					offset += 16 + nameLength
				}
			}
		}
	}
#endif
