import Foundation

#if canImport(Glibc)
	import Glibc
#endif

/// Three etcd members for the heal benchmarks: each its own process and data folder, signalled and restarted by
/// process id. etcd is the one ``benchmarkEtcdExecutable()`` finds; status comes through `curl`, which survives any
/// answer a member in trouble gives.
final class HealCluster: @unchecked Sendable {
	private let folder: URL
	private let etcd: String
	private let clientPorts: [Int]
	private let peerPorts: [Int]
	private var processes: [Process?] = [nil, nil, nil]

	var endpoints: [String] { clientPorts.map { "http://127.0.0.1:\($0)" } }

	init() {
		folder = FileManager.default.temporaryDirectory.appending(path: "defaults-bench-heal-\(UUID().uuidString)")
		try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
		etcd = benchmarkEtcdExecutable()
		let base = Int.random(in: 20_000..<29_000)
		clientPorts = [base, base + 2, base + 4]
		peerPorts = [base + 1, base + 3, base + 5]
		for index in 0..<3 {
			launch(index)
		}
		_ = waitForLeader()
	}

	func launch(_ index: Int) {
		let peers = (0..<3).map { "m\($0)=http://127.0.0.1:\(peerPorts[$0])" }.joined(separator: ",")
		let process = Process()
		process.executableURL = URL(filePath: etcd)
		process.arguments = [
			"--name", "m\(index)", "--data-dir", folder.appending(path: "m\(index)").path,
			"--listen-client-urls", endpoints[index], "--advertise-client-urls", endpoints[index],
			"--listen-peer-urls", "http://127.0.0.1:\(peerPorts[index])",
			"--initial-advertise-peer-urls", "http://127.0.0.1:\(peerPorts[index])",
			"--initial-cluster", peers, "--initial-cluster-token", folder.lastPathComponent,
			"--heartbeat-interval", "50", "--election-timeout", "500", "--log-level", "error",
		]
		process.standardError = FileHandle.nullDevice
		try! process.run()
		processes[index] = process
	}

	func signal(_ index: Int, _ signal: Int32) {
		guard let process = processes[index] else {
			return
		}
		kill(process.processIdentifier, signal)
		if signal == SIGKILL {
			process.waitUntilExit()
			processes[index] = nil
		}
	}

	/// The member every answering member follows, waiting for one at most 20 s.
	func waitForLeader() -> Int {
		let deadline = Date().addingTimeInterval(20)
		while Date() < deadline {
			let statuses = endpoints.map(status)
			if let leader = statuses.first??.leader, statuses.allSatisfy({ $0?.leader == leader }),
				let index = statuses.firstIndex(where: { $0?.member == leader })
			{
				return index
			}
			usleep(50_000)
		}
		fatalError("the etcd cluster agreed on no leader within 20 s")
	}

	private func status(_ endpoint: String) -> (member: String, leader: String)? {
		let curl = Process()
		curl.executableURL = URL(filePath: "/usr/bin/curl")
		curl.arguments = ["-s", "--max-time", "0.5", "-X", "POST", endpoint + "/v3/maintenance/status", "-d", "{}"]
		let output = Pipe()
		curl.standardOutput = output
		guard (try? curl.run()) != nil else {
			return nil
		}
		let data = output.fileHandleForReading.readDataToEndOfFile()
		curl.waitUntilExit()
		guard let answer = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
			let header = answer["header"] as? [String: Any], let member = header["member_id"] as? String,
			let leader = answer["leader"] as? String, leader != "0"
		else {
			return nil
		}
		return (member, leader)
	}

	func stop() {
		for index in 0..<3 {
			signal(index, SIGCONT)
			signal(index, SIGKILL)
		}
		try? FileManager.default.removeItem(at: folder)
	}
}
