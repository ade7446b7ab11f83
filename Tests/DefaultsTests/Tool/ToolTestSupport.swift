import Foundation
import Testing

/// Runs the built `defaults` executable against a temporary configuration folder (`XDG_CONFIG_HOME`).
struct ToolRunner {
	let folder: TemporaryDirectory
	/// The folders runs get as `$XDG_CONFIG_DIRS`, first first; none leaves the variable as the test process has it.
	var systemFolders: [URL] = []

	init() throws {
		folder = try TemporaryDirectory()
	}

	/// A runner whose runs read system-wide defaults from the folders `names`, made in the temporary folder (first
	/// first), readable by every user as `/etc/xdg` is.
	init(systemFolders names: [String]) throws {
		try self.init()
		systemFolders = names.map { folder.file($0) }
		for url in systemFolders {
			try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
			try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
		}
	}

	/// The environment every run gets: the temporary folder as the configuration folder, and the system folders.
	var environment: [String: String] {
		guard !systemFolders.isEmpty else {
			return folder.configEnvironment
		}
		return folder.configEnvironment.merging(
			["XDG_CONFIG_DIRS": systemFolders.map(\.path).joined(separator: ":")]
		) { _, new in new }
	}

	/// The file of the domain `name`.
	func file(_ name: String) -> URL {
		folder.file(name + ".plist")
	}

	/// Runs `defaults` with `arguments` and waits for it.
	@discardableResult
	func run(_ arguments: String..., timeout: TimeInterval = 20) throws -> ChildProcess.Result {
		try run(arguments, timeout: timeout)
	}

	/// Runs `defaults` with `arguments` and waits for it.
	@discardableResult
	func run(_ arguments: [String], timeout: TimeInterval = 20) throws -> ChildProcess.Result {
		try ChildProcess.run(arguments, executable: "defaults", environment: environment, timeout: timeout)
	}

	/// Runs `defaults` with `arguments`, expecting it to succeed, and returns its standard output.
	@discardableResult
	func succeed(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
		try succeed(arguments, sourceLocation: sourceLocation)
	}

	/// Runs `defaults` with `arguments`, expecting it to succeed, and returns its standard output.
	@discardableResult
	func succeed(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
		let result = try run(arguments)
		#expect(result.status == 0, "\(arguments): \(result)", sourceLocation: sourceLocation)
		return result.standardOutput
	}

	/// Runs `defaults` with `arguments` and standard input from `input`, through a shell pipe.
	func run(_ arguments: [String], input: Data) throws -> ChildProcess.Result {
		let inputFile = folder.file("input-\(UUID().uuidString)")
		try input.write(to: inputFile)
		let executable = try ChildProcess.helperURL(named: "defaults").path
		let command =
			([executable] + arguments).map(Self.shellQuoted).joined(separator: " ") + " < "
			+ Self.shellQuoted(inputFile.path)
		return try ChildProcess.run(["-c", command], executable: "/bin/sh", environment: environment)
	}

	/// Starts `defaults` with `arguments` without waiting for it.
	func start(_ arguments: String...) throws -> ChildProcess {
		try ChildProcess(arguments, executable: "defaults", environment: environment)
	}

	/// The domain's file, parsed by Foundation.
	func contents(of name: String) throws -> [String: Any] {
		let data = try Data(contentsOf: file(name))
		let parsed = try PropertyListSerialization.propertyList(from: data, format: nil)
		return try #require(parsed as? [String: Any])
	}

	/// Writes `values` as the domain's file, as another program would.
	func seed(_ name: String, _ values: [String: Any]) throws {
		let data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
		try data.write(to: file(name))
	}

	static func shellQuoted(_ text: String) -> String {
		"'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
	}
}

/// Waits until `condition` holds, at most `seconds`.
func waitUntil(seconds: Double = 15, _ condition: () -> Bool) -> Bool {
	let deadline = Date().addingTimeInterval(seconds)
	while Date() < deadline {
		if condition() {
			return true
		}
		usleep(10_000)
	}
	return condition()
}
