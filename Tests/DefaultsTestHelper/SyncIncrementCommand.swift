import Defaults
import DefaultsEtcd
import Foundation

/// `sync-increment <endpoints,…> <prefix> <name> <count> <give-up>`: one machine adding 1 to the synced integer key
/// `<name>` `<count>` times with `Defaults.update` (for a synced key a compare-and-swap loop against etcd), as
/// machines sharing a counter would.
///
/// An update that fails having changed nothing (etcd unreachable, a leader election under way) is tried again until
/// <give-up> has come (a file the test creates when no machine made progress for a while, or a number of seconds);
/// one whose outcome is unknown ends the run (exit 2), since trying again could count twice. Prints
/// `incremented <count> runs <closure runs> failed <updates tried again> last <value>` and exits 0 when all went
/// through, 1 when told to give up.
let syncIncrementCommands: [String: @Sendable ([String]) -> Int32] = [
	"sync-increment": { arguments in
		guard arguments.count == 5, let count = Int(arguments[3]) else {
			return ObservationCommand.usage("sync-increment <endpoints,…> <prefix> <name> <count> <give-up>")
		}
		let key = Defaults.Key<Int>(arguments[2], default: 0)
		Defaults.iCloud.add(key)
		Defaults.iCloud.configure(
			remote: try! EtcdClient(endpoints: arguments[0].split(separator: ",").map(String.init), requestTimeout: 2),
			prefix: arguments[1])
		let status = SyncCommand.blocking {
			await SyncIncrement.run(key, count: count, until: ObservationCommand.GiveUp(arguments[4]))
		}
		_ = Defaults.standardStore.flush()
		return status
	}
]

enum SyncIncrement {
	private final class Counts: @unchecked Sendable {
		var runs = 0
	}

	static func run(_ key: Defaults.Key<Int>, count: Int, until giveUp: ObservationCommand.GiveUp) async -> Int32 {
		let counts = Counts()
		var failed = 0
		var last: Int?
		var done = 0
		while done < count {
			guard !giveUp.hasCome else {
				print("gave up after \(done) of \(count), failed \(failed)")
				return 1
			}
			do {
				let value = try await Defaults.update(key) { value in
					counts.runs += 1
					value += 1
				}
				last = value
				done += 1
			} catch let error as Defaults.SyncedUpdateError where error.changedNothing {
				failed += 1
				try? await Task.sleep(for: .milliseconds(50))
			} catch {
				print("outcome unknown after \(done): \(error)")
				return 2
			}
		}
		print(
			"incremented \(done) runs \(counts.runs) failed \(failed) last \(last.map { "\($0)" } ?? "-")")
		return 0
	}
}
