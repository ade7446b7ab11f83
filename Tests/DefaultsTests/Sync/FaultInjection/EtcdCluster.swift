import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// A real 3-member etcd cluster for fault injection: each member its own data folder and process, started, killed,
/// paused and restarted by process id.
///
/// ```swift
/// let cluster = try await EtcdCluster.start(etcd: try EtcdServer.executable())
/// defer { cluster.stop() }
/// try await cluster.restart(cluster.leader()!)
/// ```
///
/// On loopback by default; with ``IsolatedNetwork`` each member runs in a network namespace of its own, so that one
/// can be cut off from its peers while machines still reach it.
final class EtcdCluster: @unchecked Sendable {
	struct Member {
		let name: String
		let clientURL: String
		let peerURL: String
		/// Where peer traffic is accepted: the advertised address, or every address inside a namespace.
		let listenPeerURL: String
		let listenClientURL: String
		let dataFolder: URL
		/// The network namespace the member runs in, if any.
		let namespace: String?
		var process: ChildProcess?
	}

	struct NotReady: Error, CustomStringConvertible {
		let description: String
	}

	let etcd: URL
	let folder: TemporaryDirectory
	let network: IsolatedNetwork?
	private(set) var members: [Member]

	var endpoints: [String] { members.map(\.clientURL) }

	private init(etcd: URL, folder: TemporaryDirectory, network: IsolatedNetwork?, members: [Member]) {
		self.etcd = etcd
		self.folder = folder
		self.network = network
		self.members = members
	}

	/// Starts three members and waits (at most 20 s) until they agree on a leader.
	static func start(etcd: URL, network: IsolatedNetwork? = nil) async throws -> EtcdCluster {
		guard EtcdServer.isProgram(etcd.path) else {
			throw EtcdServer.NotInstalled(named: etcd.path)
		}
		let folder = try TemporaryDirectory()
		// A client and a peer port per member, all different.
		let ports = network == nil ? try EtcdServer.freePorts(6) : []
		var members: [Member] = []
		for index in 0..<3 {
			let dataFolder = folder.file("member\(index)")
			if let network {
				let address = network.memberAddresses[index]
				members.append(
					Member(
						name: "m\(index)", clientURL: "http://\(address.client):2379",
						peerURL: "http://\(address.peer):2380", listenPeerURL: "http://\(address.peer):2380",
						listenClientURL: "http://\(address.client):2379", dataFolder: dataFolder,
						namespace: network.namespaces[index]))
			} else {
				let client = "http://127.0.0.1:\(ports[2 * index])"
				let peer = "http://127.0.0.1:\(ports[2 * index + 1])"
				members.append(
					Member(
						name: "m\(index)", clientURL: client, peerURL: peer, listenPeerURL: peer,
						listenClientURL: client,
						dataFolder: dataFolder, namespace: nil))
			}
		}
		let cluster = EtcdCluster(etcd: etcd, folder: folder, network: network, members: members)
		for index in 0..<3 {
			try cluster.launch(index)
		}
		try await cluster.waitUntilServing(timeout: 20)
		return cluster
	}

	/// Starts member `index` on its data folder (a new member the first time, the same member after that).
	func launch(_ index: Int) throws {
		let member = members[index]
		let initialCluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
		let arguments = [
			"--name", member.name, "--data-dir", member.dataFolder.path,
			"--listen-client-urls", member.listenClientURL, "--advertise-client-urls", member.clientURL,
			"--listen-peer-urls", member.listenPeerURL, "--initial-advertise-peer-urls", member.peerURL,
			"--initial-cluster", initialCluster, "--initial-cluster-state", "new",
			"--initial-cluster-token", folder.url.lastPathComponent,
			// Elections within a second or two, so that a fault and its heal fit a test of a few seconds; not faster,
			// or twenty machines on two cores starve the heartbeats and leaders change without a fault.
			"--heartbeat-interval", "100", "--election-timeout", "1000",
			// A member that rejoins (healed, restarted) first asks whether it could win before it raises its term:
			// without it (etcd 3.4's default; 3.5 turned it on) a member cut off from its peers comes back at a higher
			// term and forces an election on the others, 2-3 s without a leader after every heal.
			"--pre-vote=true",
			// The checker reads the whole history: nothing may be compacted away.
			"--auto-compaction-retention", "0",
			"--log-level", "error",
		]
		_ = EtcdServer.leftoversStopped
		if let namespace = member.namespace {
			// `ip netns exec` execs etcd in place: the process id stays etcd's.
			members[index].process = try ChildProcess(
				["netns", "exec", namespace, etcd.path] + arguments, executable: IsolatedNetwork.ip)
		} else {
			members[index].process = try ChildProcess(arguments, executable: etcd.path)
		}
		// Written down like a single test etcd, so that a member left by a crashed test process is stopped later.
		if let process = members[index].process {
			EtcdServer.register(etcd: process.processIdentifier, dataFolder: member.dataFolder.path)
		}
	}

	func isRunning(_ index: Int) -> Bool {
		members[index].process?.isRunning ?? false
	}

	/// `kill -9`: a crash, or a cut power cable.
	func kill(_ index: Int) {
		guard let process = members[index].process else {
			return
		}
		members[index].process = nil
		EtcdServer.unregister(etcd: process.processIdentifier)
		process.kill(SIGCONT)
		process.kill(SIGKILL)
		_ = try? process.wait(timeout: 5)
	}

	/// SIGSTOP: a member that hangs (a long GC pause, a stuck disk) without closing a connection.
	func pause(_ index: Int) {
		members[index].process?.kill(SIGSTOP)
	}

	func resume(_ index: Int) {
		members[index].process?.kill(SIGCONT)
	}

	/// Starts a member killed before on the same data, and waits until it serves.
	func restart(_ index: Int, timeout: TimeInterval = 15) async throws {
		try launch(index)
		try await waitUntilServing(members: [index], timeout: timeout)
	}

	/// Stops every member (kill -9, as a power cut of the whole cluster would).
	func stop() {
		for index in members.indices {
			kill(index)
		}
	}

	deinit {
		stop()
	}

	/// `/v3/maintenance/status` of one member: its id and the leader it follows (`nil` without one).
	func status(_ index: Int) async -> (member: String, leader: String?)? {
		guard
			let answer = await EtcdGateway.call(members[index].clientURL, "/v3/maintenance/status", [:], timeout: 0.5),
			let header = answer["header"] as? [String: Any], let member = header["member_id"] as? String
		else {
			return nil
		}
		let leader = answer["leader"] as? String
		return (member, leader == nil || leader == "0" ? nil : leader)
	}

	/// The raft term member `index` is in (`nil` when it does not answer): it grows with every election.
	func term(_ index: Int) async -> Int64? {
		let answer = await EtcdGateway.call(members[index].clientURL, "/v3/maintenance/status", [:], timeout: 0.5)
		return ((answer?["header"] as? [String: Any])?["raft_term"] as? String).flatMap { Int64($0) }
	}

	/// The index of the member every answering member names as leader, if they agree.
	func leader() async -> Int? {
		var statuses: [(Int, (member: String, leader: String?))] = []
		for index in members.indices {
			if let status = await status(index) {
				statuses.append((index, status))
			}
		}
		guard let leader = statuses.first?.1.leader, statuses.allSatisfy({ $0.1.leader == leader }) else {
			return nil
		}
		return statuses.first { $0.1.member == leader }?.0
	}

	/// Waits until `members` (every member by default) answer and follow a leader that is one of them.
	func waitUntilServing(members indices: [Int]? = nil, timeout: TimeInterval) async throws {
		let indices = indices ?? Array(members.indices)
		let deadline = Date().addingTimeInterval(timeout)
		while Date() < deadline {
			var statuses: [(member: String, leader: String?)?] = []
			for index in indices {
				statuses.append(await status(index))
			}
			if statuses.allSatisfy({ $0?.leader != nil }) {
				return
			}
			try await Task.sleep(for: .milliseconds(100))
		}
		let logs = indices.map { "\(members[$0].name): \(members[$0].process?.standardErrorSoFar ?? "not running")" }
		throw NotReady(
			description: "etcd members \(indices) did not follow a leader within \(timeout) s; logs:\n"
				+ logs.joined(separator: "\n"))
	}

	/// Waits until member `index` no longer follows a leader: proof that a cut took effect.
	func waitUntilLeaderless(_ index: Int, timeout: TimeInterval) async throws {
		let deadline = Date().addingTimeInterval(timeout)
		while Date() < deadline {
			if let status = await status(index), status.leader == nil {
				return
			}
			try await Task.sleep(for: .milliseconds(100))
		}
		throw NotReady(description: "member \(index) still follows a leader \(timeout) s after it was cut off")
	}
}
