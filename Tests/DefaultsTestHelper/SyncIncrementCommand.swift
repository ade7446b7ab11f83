import Defaults
import DefaultsEtcd
import Foundation

/// `sync-increment <endpoints,…> <prefix> <name> <count> <seconds>`: one machine adding 1 to the synced integer key
/// `<name>` `<count>` times with an atomic update (a compare-and-swap loop against etcd), as machines sharing a
/// counter would.
///
/// An update that fails having changed nothing (etcd unreachable, a leader election under way) is tried again until
/// `<seconds>` have passed; one whose outcome is unknown ends the run (exit 2), since trying again could count twice.
/// Prints `incremented <count> runs <closure runs> failed <updates tried again> recognised <lost answers recognised
/// by their marks> last <value>` and exits 0 when all went through, 1 when time ran out, 3 when the key is not synced.
let syncIncrementCommands: [String: @Sendable ([String]) -> Int32] = [
	"sync-increment": { arguments in
		guard arguments.count == 5, let count = Int(arguments[3]), let seconds = Double(arguments[4]) else {
			return ObservationCommand.usage("sync-increment <endpoints,…> <prefix> <name> <count> <seconds>")
		}
		let name = arguments[2]
		Defaults.iCloud.add(Defaults.Key<Int>(name, default: 0))
		Defaults.iCloud.configure(
			remote: try! EtcdClient(endpoints: arguments[0].split(separator: ",").map(String.init), requestTimeout: 2),
			prefix: arguments[1])
		let status = SyncCommand.blocking {
			await SyncIncrement.run(name: name, count: count, deadline: Date().addingTimeInterval(seconds))
		}
		_ = Defaults.standardStore.flush()
		return status
	}
]

enum SyncIncrement {
	private final class Counts: @unchecked Sendable {
		var runs = 0
	}

	static func run(name: String, count: Int, deadline: Date) async -> Int32 {
		let counts = Counts()
		var failed = 0
		var last: Any?
		var done = 0
		while done < count {
			guard Date() < deadline else {
				print("timed out after \(done) of \(count), failed \(failed)")
				return 1
			}
			do {
				let outcome = try await Defaults.SyncEngine.atomicUpdate(forKey: name, in: Defaults.standardStore) {
					counts.runs += 1
					return ($0 as? Int ?? 0) + 1
				}
				guard case .updated(let value) = outcome else {
					print("not synced")
					return 3
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
			"incremented \(done) runs \(counts.runs) failed \(failed) "
				+ "recognised \(Defaults.SyncEngine.recognisedLostAnswers) last \(last.map { "\($0)" } ?? "-")")
		return 0
	}
}
