import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// Runs the package's `DefaultsTestHelper` executable (or another executable product of the package, such as
/// `defaults`) in a child process, for tests of what survives a process exit or happens between processes.
///
/// ```swift
/// let folder = try TemporaryDirectory()
/// let result = try ChildProcess.run(["file-store-read", "standard", "volume"], environment: folder.configEnvironment)
/// #expect(result.status == 0)
/// ```
///
/// Give each child a temporary `XDG_CONFIG_HOME` (``TemporaryDirectory/configEnvironment``), so that no test
/// writes to the real `~/.config`.
struct ChildProcess {
	/// What a finished child left behind.
	struct Result: CustomStringConvertible {
		/// The exit status, or the signal number when ``wasSignaled`` is `true`.
		let status: Int32
		let wasSignaled: Bool
		let standardOutput: String
		let standardError: String

		/// Standard output split into lines, without empty ones.
		var lines: [String] {
			standardOutput.split(separator: "\n").map(String.init)
		}

		var description: String {
			"status \(status)\(wasSignaled ? " (signal)" : ""), stdout: \(standardOutput), stderr: \(standardError)"
		}
	}

	struct TimedOut: Error, CustomStringConvertible {
		let arguments: [String]
		var executable = "DefaultsTestHelper"
		/// What the child said when told to give up (``ChildProcess/wait(timeout:givingUpBy:)``), if it ended then.
		var report: Result?
		var description: String {
			"\(executable) \(arguments.joined(separator: " ")) did not finish in time"
				+ (report.map { "; told to give up, it ended with \($0)" } ?? "")
		}
	}

	struct HelperNotFound: Error, CustomStringConvertible {
		let searched: [URL]
		var executable = "DefaultsTestHelper"
		var description: String {
			"\(executable) not found; looked in \(searched.map(\.path)). Build the package's tests first."
		}
	}

	private let process: Process
	private let output: URL
	private let errors: URL
	let arguments: [String]
	let executable: String

	/// Starts the helper (or the package's executable `executable`) with `arguments` and `environment` added to this
	/// process's environment, without waiting.
	init(_ arguments: [String], executable: String = "DefaultsTestHelper", environment: [String: String] = [:]) throws {
		self.arguments = arguments
		self.executable = executable
		let folder = FileManager.default.temporaryDirectory
		let name = "\(URL(filePath: executable).lastPathComponent)-\(UUID().uuidString)"
		output = folder.appending(path: name + ".out")
		errors = folder.appending(path: name + ".err")
		_ = FileManager.default.createFile(atPath: output.path, contents: nil)
		_ = FileManager.default.createFile(atPath: errors.path, contents: nil)
		process = Process()
		process.executableURL = try Self.helperURL(named: executable)
		process.arguments = arguments
		process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
		// Files rather than pipes: a child that writes much can never block on a full pipe.
		process.standardOutput = try FileHandle(forWritingTo: output)
		process.standardError = try FileHandle(forWritingTo: errors)
		try process.run()
	}

	/// Runs the helper (or `executable`) with `arguments` and waits for it, at most `timeout` seconds.
	static func run(
		_ arguments: [String], executable: String = "DefaultsTestHelper", environment: [String: String] = [:],
		timeout: TimeInterval = 20
	) throws
		-> Result
	{
		try ChildProcess(arguments, executable: executable, environment: environment).wait(timeout: timeout)
	}

	/// The same run for asynchronous tests, which Swift picks there (`try await ChildProcess.run(…)`): it waits with
	/// ``wait(timeout:)``'s asynchronous form, so the child's run holds none of the concurrency pool's threads (as
	/// many as cores). The synchronous run held one for the child's whole run; in CI's first pass, where the sync
	/// suites run at once, a few such runs left the other tests' sync engines without a thread for seconds. A wait
	/// that ends early (its task cancelled by a time limit) kills the child first, by its process id.
	static func run(
		_ arguments: [String], executable: String = "DefaultsTestHelper", environment: [String: String] = [:],
		timeout: TimeInterval = 20
	) async throws
		-> Result
	{
		try await ChildProcess(arguments, executable: executable, environment: environment).wait(timeout: timeout)
	}

	var processIdentifier: Int32 { process.processIdentifier }
	var isRunning: Bool { process.isRunning }

	/// Sends `signal` to the child (`SIGKILL` by default).
	func kill(_ signal: Int32 = SIGKILL) {
		_ = Foundation.kill(process.processIdentifier, signal)
	}

	/// Kills the child, by its process id, if it is still running: for a `defer` after starting a child that waits
	/// for an event and keeps no clock of its own, so that a test failing before the event leaves nothing behind.
	func stopIfRunning() {
		if process.isRunning {
			kill()
			process.waitUntilExit()
		}
	}

	/// What the child has written to standard output so far.
	var standardOutputSoFar: String {
		(try? String(contentsOf: output, encoding: .utf8)) ?? ""
	}

	/// What the child has written to standard error so far.
	var standardErrorSoFar: String {
		(try? String(contentsOf: errors, encoding: .utf8)) ?? ""
	}

	/// Waits for the child to end, at most `timeout` seconds; kills it and throws ``TimedOut`` after that.
	func wait(timeout: TimeInterval = 20) throws -> Result {
		let deadline = Date().addingTimeInterval(timeout)
		while process.isRunning {
			if Date() > deadline {
				throw killForTimeout()
			}
			usleep(2_000)
		}
		return finished()
	}

	/// The same wait for asynchronous tests, which Swift picks there: it sleeps as a task instead of blocking a
	/// thread. Swift's concurrency pool has as many threads as cores (two on CI), and a blocking wait of 50 s for a
	/// fleet of machines held one of them while other tests' sync engines needed it. A wait cancelled (a test's time
	/// limit) kills the child first, by its process id.
	func wait(timeout: TimeInterval = 20) async throws -> Result {
		let deadline = Date().addingTimeInterval(timeout)
		while process.isRunning {
			if Date() > deadline {
				throw killForTimeout()
			}
			try await pauseOrStop()
		}
		return finished()
	}

	/// Waits until the child has printed `line`, at most `timeout` seconds; `false` at once when the child ended
	/// without printing it. The output is looked at once more after the deadline: a task that was not scheduled
	/// again before it (the thread sanitizer's pass, with tests holding every thread) missed a line printed long ago.
	func waitForOutput(_ line: String, timeout: TimeInterval = 10) async throws -> Bool {
		let deadline = Date().addingTimeInterval(timeout)
		func hasPrinted() -> Bool {
			standardOutputSoFar.split(separator: "\n").contains(Substring(line))
		}
		while Date() < deadline {
			let ended = !process.isRunning
			if hasPrinted() {
				return true
			}
			if ended {
				return false
			}
			try await Task.sleep(for: .milliseconds(20))
		}
		return hasPrinted()
	}

	/// Waits for a child that waits for an event (a helper command with a `<give-up>` file: it keeps no clock of its
	/// own) to end, at most `timeout` seconds. After that it creates `giveUp`, on which the child stops waiting and
	/// says on standard error what it saw, and throws ``TimedOut`` carrying that; a child that does not end within
	/// 10 s more is killed, as one whose wait is cancelled is at once.
	func wait(timeout: TimeInterval, givingUpBy giveUp: URL) async throws -> Result {
		let deadline = Date().addingTimeInterval(timeout)
		while process.isRunning, Date() < deadline {
			try await pauseOrStop()
		}
		guard process.isRunning else {
			return finished()
		}
		_ = FileManager.default.createFile(atPath: giveUp.path, contents: nil)
		let told = Date().addingTimeInterval(10)
		while process.isRunning {
			if Date() > told {
				throw killForTimeout()
			}
			try await pauseOrStop()
		}
		throw TimedOut(arguments: arguments, executable: executable, report: finished())
	}

	/// A pause of the waits above; cancelled (a test's time limit, a failing task group), it kills the child by its
	/// process id before it throws, so that no caller's path leaves it running (a fleet forgets a machine before it
	/// waits for it).
	private func pauseOrStop() async throws {
		do {
			try await Task.sleep(for: .milliseconds(5))
		} catch {
			stopIfRunning()
			throw error
		}
	}

	private func killForTimeout() -> TimedOut {
		kill()
		process.waitUntilExit()
		return TimedOut(arguments: arguments, executable: executable)
	}

	/// The ended child's status and output; its output files are removed.
	private func finished() -> Result {
		process.waitUntilExit()
		defer {
			try? FileManager.default.removeItem(at: output)
			try? FileManager.default.removeItem(at: errors)
		}
		return Result(
			status: process.terminationStatus,
			wasSignaled: process.terminationReason == .uncaughtSignal,
			standardOutput: (try? String(contentsOf: output, encoding: .utf8)) ?? "",
			standardError: (try? String(contentsOf: errors, encoding: .utf8)) ?? "")
	}

	/// The helper, like every executable of the package, sits next to the test bundle in SwiftPM's build folder;
	/// `DEFAULTS_TEST_HELPER` overrides that for the helper, and an absolute path names any program.
	static func helperURL(named executable: String = "DefaultsTestHelper") throws -> URL {
		let environment = ProcessInfo.processInfo.environment
		if executable == "DefaultsTestHelper", let path = environment["DEFAULTS_TEST_HELPER"] {
			return URL(filePath: path)
		}
		if executable.hasPrefix("/") {
			return URL(filePath: executable)
		}
		var folders = [
			URL(filePath: CommandLine.arguments[0]).absoluteURL.deletingLastPathComponent(),
			Bundle.main.bundleURL,
			Bundle.main.bundleURL.deletingLastPathComponent(),
		]
		if let executable = Bundle.main.executableURL {
			folders.append(executable.deletingLastPathComponent())
		}
		// On Apple platforms the test bundle is `….xctest/Contents/MacOS/…`.
		folders += Bundle.allBundles.map { $0.bundleURL.deletingLastPathComponent() }
		for folder in folders {
			let candidate = folder.appending(path: executable)
			if FileManager.default.isExecutableFile(atPath: candidate.path) {
				return candidate
			}
		}
		throw HelperNotFound(searched: folders, executable: executable)
	}
}

/// A fresh folder under the system's temporary folder, removed when the value is released.
final class TemporaryDirectory: Sendable {
	let url: URL

	/// A folder under `base`, by default the system's temporary folder.
	init(under base: URL? = nil) throws {
		url = (base ?? FileManager.default.temporaryDirectory).appending(
			path: "DefaultsTests-\(UUID().uuidString)", directoryHint: .isDirectory)
		try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
	}

	deinit {
		try? FileManager.default.removeItem(at: url)
	}

	/// `url` with `name` appended.
	func file(_ name: String) -> URL {
		url.appending(path: name, directoryHint: .notDirectory)
	}

	/// An environment that makes this folder the child's configuration folder (`XDG_CONFIG_HOME`).
	var configEnvironment: [String: String] {
		["XDG_CONFIG_HOME": url.path(percentEncoded: false)]
	}
}
