// Mirrors the DocC article "Syncing across machines" (Sources/Defaults/Documentation.docc/SyncingAcrossMachines.md):
// the same calls, with a test etcd instead of 127.0.0.1:2379, and two in-memory stores, each with its own
// `Defaults.SyncEngine` (what `Defaults.iCloud.configure` makes for the standard store), as two machines. Keep the two
// in step.
import Defaults
import DefaultsEtcd
import Foundation
import Testing

@Suite(.serialized, .scaledTimeLimit(minutes: 1)) struct SyncingAcrossMachinesExampleTests {
	@Test(.requiresEtcd) func aThemeSetOnOneMachineIsHeardOnTheOther() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let remote = try EtcdClient(endpoints: [etcd.endpoint])

		let desktop = Defaults.InMemoryStore()
		let laptop = Defaults.InMemoryStore()
		let themeOnDesktop = Defaults.Key<String>("theme", default: "light", suite: desktop)
		let themeOnLaptop = Defaults.Key<String>("theme", default: "light", suite: laptop)
		let desktopSync = Defaults.SyncEngine(remote: remote, prefix: "/defaults/editor/", store: desktop)
		let laptopSync = Defaults.SyncEngine(remote: remote, prefix: "/defaults/editor/", store: laptop)
		defer {
			desktopSync.stop()
			laptopSync.stop()
		}
		desktopSync.add([themeOnDesktop.name])
		laptopSync.add([themeOnLaptop.name])
		desktopSync.start()
		laptopSync.start()

		let heard = Task {
			for await theme in Defaults.updates(themeOnLaptop) where theme == "dark" {
				return true
			}
			return false
		}
		// A limit far away: connecting and hearing the change take a moment, longer on a busy machine.
		let timeout = Task {
			try await Task.sleep(for: .seconds(30).scaledForSanitizer)
			heard.cancel()
		}
		// Once the laptop's engine is connected, its watch hears everything from here on.
		for await status in laptopSync.statusUpdates where status.isConnected {
			break
		}
		desktop[themeOnDesktop] = "dark"
		#expect(await heard.value)
		timeout.cancel()
		#expect(laptop[themeOnLaptop] == "dark")
		#expect(laptopSync.status.lastError == nil)
	}

	@Test func aStatusLineSeesTheQueueWhileOffline() async throws {
		let store = Defaults.InMemoryStore()
		let unreachable = try EtcdClient(
			endpoints: ["http://127.0.0.1:\(try EtcdServer.freePort())"], requestTimeout: 1)
		let engine = Defaults.SyncEngine(remote: unreachable, prefix: "/defaults/editor/", store: store)
		engine.add(["theme"])
		try store.write("dark", forKey: "theme")
		#expect(await engine.synchronize() == false)
		#expect(engine.status.isConnected == false)
		#expect(engine.status.lastError != nil)
		#expect(engine.status.pendingCount == 1)
		#expect(store.storedValue(forKey: "theme") as? String == "dark")
	}
}
