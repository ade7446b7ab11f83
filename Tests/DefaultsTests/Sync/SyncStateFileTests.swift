import Foundation
import Testing

@testable import Defaults

/// A settings file has one sync state: every engine of a store shares the change journal beside its settings file,
/// and compacts it by the records of its own state. A second engine of the store in this process with a state file
/// of its own is reported when it is made; before, it was not detected at all.
@Suite(.scaledTimeLimit(minutes: 1)) struct SyncStateFileTests {
	/// One `.unsupported` failure names both state files; an engine with the store's state file is not reported.
	@Test func anEngineWithAnotherStateFileForASettingsFileInUseIsReported() throws {
		FailureRecorder.start()
		let folder = try TemporaryDirectory()
		let prefix = "/test/\(uniqueKeyName("stateFiles"))/"
		let remote = ChoreographedRemote(entries: [], revision: 1)
		let store = try SyncSettingsFileEdgeTests.freshStore(at: folder.file("app.plist"))
		let first = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store)
		let same = Defaults.SyncEngine(
			remote: remote, prefix: prefix, store: store, stateFile: folder.file("app.plist.sync.json"))
		#expect(FailureRecorder.failures(forKey: prefix).isEmpty, "the same state file is not reported")

		let other = folder.file("other.sync.json")
		let second = Defaults.SyncEngine(remote: remote, prefix: prefix, store: store, stateFile: other)
		let reports = FailureRecorder.failures(forKey: prefix)
		#expect(reports.map(\.reason) == [.unsupported], "\(reports.map(\.message))")
		#expect(
			reports.first.map { $0.message.contains(other.path) && $0.message.contains("app.plist.sync.json") } == true,
			"names both state files: \(reports.map(\.message))")
		withExtendedLifetime((first, same, second)) {}
	}

	/// `Defaults.iCloud.configure` called again with another state file lets the engine it replaces go before it makes
	/// the new one, which therefore is not reported (in a child process: `Defaults.iCloud` is the process's). Before,
	/// the replaced engine was still live when the new one was made.
	@Test func reconfiguringWithAnotherStateFileIsNotReported() async throws {
		let folder = try TemporaryDirectory()
		let result = try await ChildProcess(["sync-reconfigure", folder.url.path]).wait()
		#expect(result.status == 0 && result.lines.last == "done", "\(result)")
		#expect(!result.lines.contains { $0.hasPrefix("failure") }, "\(result.lines)")
	}
}
