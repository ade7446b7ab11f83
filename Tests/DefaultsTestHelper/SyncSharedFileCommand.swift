import Defaults
import DefaultsEtcd
import Foundation

/// `sync-shared <endpoint> <prefix> <id> <increments> <plain-every> <seconds> <folder>`: one of several processes
/// of one app sharing a settings file (the standard store of `XDG_CONFIG_HOME`), as a daemon and its command-line
/// tool do. It syncs the integer `counter` and the string `label` through etcd, adds 1 to `counter` `<increments>`
/// times with the asynchronous `Defaults.update`, and after every `<plain-every>`th increment writes `label` plainly
/// (`Defaults[key] = "p<id>.<sequence>"`: unique, so a checker can tell every write apart and order one writer's).
///
/// It configures sync and calls `synchronize()` first, as an app starting would, prints `ready`, and starts when
/// `<folder>/go` appears, so that the processes run at the same time. An update that fails having changed nothing
/// is not tried again: every failure is a line. After its work it prints `done`; when `<folder>/stop` appears it
/// synchronises and prints `synced`; when `<folder>/final` appears (once every process has synced) it synchronises
/// again, flushes, prints `final counter=<value> label=<value>` and exits 0 (1 when `<seconds>` passed first).
///
/// Lines: `ready`, `ok <value>` per acknowledged increment, `failed <reason> <message>` per failed one, `unknown
/// <message>` per one of unknown outcome, `wrote p<id>.<sequence>`, `failure <message>` per report to
/// `Defaults.failureHandler` (sync conflicts among them), `done`, `synced`, `final …`. Each line is one write.
let syncSharedFileCommands: [String: @Sendable ([String]) -> Int32] = [
	"sync-shared": { arguments in
		guard arguments.count == 7, let id = Int(arguments[2]), let increments = Int(arguments[3]),
			let plainEvery = Int(arguments[4]), plainEvery > 0, let seconds = Double(arguments[5])
		else {
			return ObservationCommand.usage(
				"sync-shared <endpoint> <prefix> <id> <increments> <plain-every> <seconds> <folder>")
		}
		let deadline = Date().addingTimeInterval(seconds)
		let folder = URL(filePath: arguments[6])
		Defaults.failureHandler = { failure in SyncShared.line("failure \(failure)") }
		let counter = Defaults.Key<Int>("counter", default: 0)
		let label = Defaults.Key<String?>("label")
		Defaults.iCloud.add(counter, label)
		Defaults.iCloud.configure(
			remote: try! EtcdClient(endpoints: [arguments[0]], requestTimeout: 2), prefix: arguments[1])
		_ = SyncCommand.blocking { await Defaults.iCloud.synchronize() }
		SyncShared.line("ready")
		guard SyncShared.waitFor(folder.appending(path: "go"), until: deadline) else {
			return 1
		}
		let isDone = SyncCommand.blocking {
			await SyncShared.run(
				counter, label, id: id, increments: increments, plainEvery: plainEvery, deadline: deadline)
		}
		guard isDone else {
			SyncShared.line("timed out")
			return 1
		}
		_ = Defaults.standardStore.flush()
		SyncShared.line("done")
		// Two rounds: every process pushes what it still has, then, once all have, each reads what the others pushed.
		guard SyncShared.waitFor(folder.appending(path: "stop"), until: deadline) else {
			return 1
		}
		_ = SyncCommand.blocking { await Defaults.iCloud.synchronize() }
		SyncShared.line("synced")
		guard SyncShared.waitFor(folder.appending(path: "final"), until: deadline) else {
			return 1
		}
		_ = SyncCommand.blocking { await Defaults.iCloud.synchronize() }
		_ = Defaults.standardStore.flush()
		SyncShared.line("final counter=\(Defaults[counter]) label=\(Defaults[label] ?? "-")")
		return 0
	},
	// sync-read-and-exit <endpoint> <prefix> <name> <work-ms>: a short-lived program: configures sync of the string
	// key <name>, synchronises, prints its value, and once its watch has heard another machine's change (at most 2 s)
	// works <work-ms> more and exits normally: the engine saves its state about 50 ms after a change it heard.
	"sync-read-and-exit": { arguments in
		guard arguments.count == 4, let work = UInt32(arguments[3]) else {
			return ObservationCommand.usage("sync-read-and-exit <endpoint> <prefix> <name> <work-ms>")
		}
		let keys = SyncCommand.start(arguments[0], arguments[1], names: [arguments[2]])
		print(SyncCommand.synchronizeOnce())
		print("\(arguments[2])=\(Defaults[keys[arguments[2]]!] ?? "-")")
		let revision = Defaults.iCloud.status.revision
		let deadline = Date().addingTimeInterval(2)
		while Defaults.iCloud.status.revision == revision, Date() < deadline {
			usleep(1_000)
		}
		usleep(work * 1000)
		return 0
	},
]

enum SyncShared {
	/// One line, one write, so that lines of several threads never interleave.
	static func line(_ text: String) {
		FileHandle.standardOutput.write(Data((text + "\n").utf8))
	}

	static func waitFor(_ file: URL, until deadline: Date) -> Bool {
		while !FileManager.default.fileExists(atPath: file.path) {
			guard Date() < deadline else {
				line("timed out waiting for \(file.lastPathComponent)")
				return false
			}
			usleep(5_000)
		}
		return true
	}

	/// Whether every increment was tried before `deadline`.
	static func run(
		_ counter: Defaults.Key<Int>, _ label: Defaults.Key<String?>, id: Int, increments: Int, plainEvery: Int,
		deadline: Date
	) async -> Bool {
		for sequence in 0..<increments {
			guard Date() < deadline else {
				return false
			}
			do {
				let value = try await Defaults.update(counter) { $0 += 1 }
				line("ok \(value)")
			} catch let error as Defaults.SyncedUpdateError where error.changedNothing {
				line("failed \(error.reason) \(error.message)")
			} catch {
				line("unknown \(error)")
			}
			if sequence % plainEvery == plainEvery - 1 {
				Defaults[label] = "p\(id).\(sequence)"
				line("wrote p\(id).\(sequence)")
			}
		}
		return true
	}
}
