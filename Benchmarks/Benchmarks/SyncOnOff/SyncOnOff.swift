import Benchmark
import EtcdSupport
import Foundation
import Synchronization

#if DEFAULTS_BEFORE
	// The library as it was before issue 28's redesign, copied at benchmark time by `Benchmarks/library-before`
	// (see Docs/Performance.md, "Sync on and off"); the same source file as `SyncOnOff`, built against it.
	import DefaultsBefore
	import DefaultsEtcdBefore
	private let library = "before"
#else
	import Defaults
	import DefaultsEtcd
	private let library = "after"
#endif

#if canImport(Glibc)
	import Glibc
#endif

// What sync costs a program that writes its settings, on a file store: local writes with sync off and on (a real
// etcd of one member, started here and stopped by its process id), a write made durable by `flush()` with and
// without the journal of intent beside the file, a synced atomic update until etcd acknowledged it, and one
// `fdatasync` of this disk for scale. Every name ends in "(after)", or in "(before)" in `SyncOnOffBefore`, the same
// benchmarks against the library before the redesign, so that one run of both targets gives both sides.
// One operation per measured iteration (scaling factor `.one`); "x1000" rows time 1,000 writes per iteration.

let benchmarks: @Sendable () -> Void = {
	Benchmark.defaultConfiguration = .init(
		metrics: [.wallClock, .mallocCountTotal],
		timeUnits: .microseconds,
		warmupIterations: 3,
		scalingFactor: .one,
		maxDuration: .seconds(3),
		maxIterations: 300
	)
	// etcd starts at the first benchmark that needs it, not when the harness only lists the benchmarks.
	let etcd = { OneMemberEtcd.shared }

	// What an app's thread pays for `Defaults[key] = value`: the write returns before the value is flushed or pushed.
	for sync in SyncMode.allCases {
		Benchmark("Sync write Int x1000 / FileStore, \(sync.rawValue) (\(library))") { benchmark in
			let machine = await Machine(etcd: etcd(), sync: sync)
			defer { machine.stop() }
			var value = 0
			for _ in benchmark.scaledIterations {
				benchmark.startMeasurement()
				for _ in 0..<1_000 {
					value += 1
					Defaults[machine.key] = value
				}
				benchmark.stopMeasurement()
			}
		}
	}

	// A write made durable at once: what the flush of one changed key costs, the journal's append and its
	// `fdatasync` included where there is a journal (the redesign records every name a flush writes, synced or not,
	// once an engine has made the journal beside the file).
	for sync in SyncMode.allCases {
		Benchmark("Sync write Int + flush() / FileStore, \(sync.rawValue) (\(library))") { benchmark in
			let machine = await Machine(etcd: etcd(), sync: sync)
			defer { machine.stop() }
			var value = 0
			for _ in benchmark.scaledIterations {
				value += 1
				benchmark.startMeasurement()
				Defaults[machine.key] = value
				let isFlushed = machine.store.flush()
				benchmark.stopMeasurement()
				precondition(isFlushed, "the flush failed")
			}
		}
	}

	// A synced key's write until etcd acknowledged it, and a synced atomic update (a compare-and-swap against etcd)
	// until it returns, on a running engine.
	Benchmark("Sync write Int, acknowledged / FileStore, synced key (\(library))") { benchmark in
		let machine = await Machine(etcd: etcd(), sync: .synced)
		defer { machine.stop() }
		var value = 0
		for _ in benchmark.scaledIterations {
			value += 1
			benchmark.startMeasurement()
			Defaults[machine.key] = value
			let isSynced = await machine.engine!.synchronize()
			benchmark.stopMeasurement()
			precondition(isSynced, "etcd did not acknowledge the write")
		}
	}
	Benchmark("Sync atomic update (+1), committed / FileStore, synced key (\(library))") { benchmark in
		let machine = await Machine(etcd: etcd(), sync: .synced)
		defer { machine.stop() }
		_ = await machine.engine!.synchronize()
		var last = 0
		for _ in benchmark.scaledIterations {
			benchmark.startMeasurement()
			let updated = try! await Defaults.update(machine.key) { $0 += 1 }
			benchmark.stopMeasurement()
			precondition(updated == last + 1, "an update was lost: \(last) then \(updated)")
			last = updated
		}
		precondition(etcd().holds(machine.prefix + "counter"), "the updates did not reach etcd")
	}

	// One line appended to a file of this disk, with and without `fdatasync`: the durability a journal line costs,
	// measured here rather than through a switch in the library.
	for isSynced in [true, false] {
		Benchmark("Sync append a journal-sized line / \(isSynced ? "fdatasync" : "no fdatasync") (\(library))") {
			benchmark in
			let folder = temporaryFolder("append")
			defer { try? FileManager.default.removeItem(at: folder) }
			let descriptor = open(
				folder.appending(path: "lines").path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
			precondition(descriptor >= 0, "the file could not be created")
			defer { close(descriptor) }
			let line = Array(#"{"k":"counter","p":4711,"s":812}"#.utf8) + [UInt8(ascii: "\n")]
			for _ in benchmark.scaledIterations {
				benchmark.startMeasurement()
				let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
				if isSynced {
					fdatasync(descriptor)
				}
				benchmark.stopMeasurement()
				precondition(written == line.count, "the line was not written")
			}
		}
	}
}

/// How the benchmarked key relates to sync.
enum SyncMode: String, CaseIterable {
	/// No engine: the file store alone.
	case off = "sync off"
	/// An engine running on the store, the key synced.
	case synced = "sync on, synced key"
	/// An engine running on the store, the key not synced (another key is).
	case unsynced = "sync on, unsynced key"
	/// An engine that ran and stopped: its journal (after) or its state files (before) stay beside the file.
	case stopped = "engine stopped, its files left"
}

/// A file store of its own in a temporary folder, its key `counter`, and the engine `sync` asks for.
final class Machine: @unchecked Sendable {
	let folder = temporaryFolder("machine")
	let store: Defaults.FileStore
	let key: Defaults.Key<Int>
	let engine: Defaults.SyncEngine?
	let prefix = "/bench/on-off/\(UUID().uuidString)/"

	init(etcd: OneMemberEtcd, sync: SyncMode) async {
		store = Defaults.FileStore.at(folder.appending(path: "settings.plist"))
		let name = sync == .unsynced ? "other" : "counter"
		key = Defaults.Key<Int>(name, default: 0, suite: store)
		guard sync != .off else {
			engine = nil
			return
		}
		let engine = Defaults.SyncEngine(remote: etcd.client, prefix: prefix, store: store)
		engine.add(["counter"])
		engine.start()
		self.engine = engine
		// The engine has read etcd and made its files beside the settings file (the journal, after the redesign).
		_ = await engine.synchronize()
		if sync == .stopped {
			engine.stop()
		}
	}

	func stop() {
		engine?.stop()
		_ = store.flush()
		try? FileManager.default.removeItem(at: folder)
	}
}

func temporaryFolder(_ name: String) -> URL {
	let folder = FileManager.default.temporaryDirectory.appending(path: "defaults-bench-\(name)-\(UUID().uuidString)")
	try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
	let isFirst = foldersToRemove.withLock { folders in
		folders.append(folder)
		return folders.count == 1
	}
	if isFirst {
		atexit {
			for folder in foldersToRemove.withLock({ $0 }) {
				try? FileManager.default.removeItem(at: folder)
			}
		}
	}
	return folder
}

/// Every folder made here, removed again at exit: a stopped engine's last pass may still write its state after
/// `stop()` returned, which makes the folder `Machine.stop` removed again.
private let foldersToRemove = Mutex<[URL]>([])

/// One etcd member for the whole run, stopped by its process id when the process exits.
final class OneMemberEtcd: Sendable {
	static let shared = OneMemberEtcd()

	let members: EtcdMembers
	let client: EtcdClient

	private init() {
		members = try! EtcdMembers(count: 1, name: "onoff", folder: temporaryFolder("etcd"), ports: 30_000..<40_000)
		// A minute: on two cores shared with builds (load averages of 60 were seen), etcd took more than 15 s.
		precondition(
			members.waitForLeader(within: 60) != nil,
			"etcd did not start within a minute; it wrote: \(members.logTail(0))")
		client = try! EtcdClient(endpoints: members.endpoints)
	}

	/// Whether etcd holds `key`.
	func holds(_ key: String) -> Bool {
		let body = #"{"key":"\#(Data(key.utf8).base64EncodedString())"}"#
		guard let text = curl(members.endpoints[0] + "/v3/kv/range", body),
			let reply = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
		else {
			return false
		}
		return (reply["kvs"] as? [Any])?.isEmpty == false
	}
}
