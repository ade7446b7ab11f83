import Foundation
import Synchronization
import Testing

@testable import Defaults

/// A change made while the remote cannot be reached is recorded as this machine's wish when it reaches the settings
/// file, not at the next push pass (none runs offline): the flush appends it to the journal beside the file before
/// the file changes, so a program ended by a signal before etcd answers finds it there at the next start. (The first
/// form recorded it in a queue file the engine wrote; this test asserted that file.)
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncOfflineQueueTests {
	@Test func aRemovalMadeOfflineIsInTheJournalBeforeAnyPush() async throws {
		let folder = try TemporaryDirectory()
		var failures: [Defaults.Failure] = []
		let settings = SettingsFile(url: folder.file("settings.plist"))
		let store = Defaults.FileStore(file: settings, failures: &failures)
		try store.write("dark", forKey: "theme")
		try store.write("mono", forKey: "font")
		#expect(store.flush())
		let remote = UnreachableRemote()
		let engine = Defaults.SyncEngine(remote: remote, prefix: "/p/", store: store)
		engine.add(["theme", "font"])
		engine.start()
		defer { engine.stop() }

		Defaults.reset(Defaults.Key<String>("theme", default: "light", suite: store))
		#expect(store.flush())
		guard case .lines(let lines) = ChangeJournal(besideSettingsFile: settings).read() else {
			Issue.record("no journal beside the settings file")
			return
		}
		#expect(lines.map(\.k) == ["theme"])
		#expect(remote.writes.load(ordering: .relaxed) == 0, "nothing reached the remote")
	}
}

/// A remote that never answers: every request fails as unreachable.
final class UnreachableRemote: Defaults.RemoteKeyValueService, @unchecked Sendable {
	let writes = Atomic<Int>(0)

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		throw Defaults.RemoteServiceError.unreachable("no route to host")
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		writes.add(1, ordering: .relaxed)
		throw Defaults.RemoteServiceError.unreachable("no route to host")
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		self.writes.add(writes.count, ordering: .relaxed)
		throw Defaults.RemoteServiceError.unreachable("no route to host")
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		AsyncThrowingStream { $0.finish(throwing: Defaults.RemoteServiceError.unreachable("no route to host")) }
	}
}
