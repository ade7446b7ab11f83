import DefaultsEtcd
import Foundation
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// Issue 28's "also broken" cases: a remote that is not the one the state knows (a wiped cluster), a state file lost
/// while the app writes at once, and a state file that cannot be written.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 2)) struct SyncLostRemoteAndStateTests {
	typealias Edge = SyncSettingsFileEdgeTests

	enum StateLoss: String, CaseIterable {
		case deleted, corrupt, fifo
	}

	/// The state file is lost and the app, restarted, at once writes one key and removes another (flushed): the
	/// engine's first read of the remote must not undo them. Issue 28 saw both undone in 8 runs of 8 before the
	/// journal; with it they are recorded intent, pushed as edits, and this test passed when it was written: it is
	/// the proof, not a fix.
	@Test(arguments: StateLoss.allCases)
	func aLostStateFileDoesNotUndoWritesMadeAtOnce(_ loss: StateLoss) async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])
		let prefix = "/test/\(uniqueKeyName("lost-state-race"))/"
		let folder = try TemporaryDirectory()
		let settings = folder.file("app.plist")
		let stateFile = folder.file("app.plist.sync.json")
		do {
			let store = try Edge.freshStore(at: settings)
			let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
			engine.add(["written", "removed"])
			try store.write("old", forKey: "written")
			try store.write("old", forKey: "removed")
			#expect(store.flush())
			#expect(await engine.synchronize())
		}
		try FileManager.default.removeItem(at: stateFile)
		switch loss {
		case .deleted:
			break
		case .corrupt:
			try Data("{\"format\": 2, \"records\": [".utf8).write(to: stateFile)
		case .fifo:
			#expect(mkfifo(stateFile.path, 0o600) == 0)
		}

		let store = try Edge.freshStore(at: settings)
		let engine = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		engine.add(["written", "removed"])
		engine.start()
		defer { engine.stop() }
		try store.write("new", forKey: "written")
		store.removeValue(forKey: "removed")
		#expect(store.flush())

		_ = await engine.synchronize()
		#expect(await engine.synchronize())
		#expect(store.storedValue(forKey: "written") as? String == "new")
		#expect(store.storedValue(forKey: "removed") == nil)
		#expect(try await Edge.value(of: prefix + "written", in: remote) == "new")
		#expect(try await Edge.value(of: prefix + "removed", in: remote) == nil)
		if loss == .fifo {
			try? FileManager.default.removeItem(at: stateFile)
		}
	}
}
