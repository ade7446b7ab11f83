import Foundation
import Synchronization

/// A temporary folder per benchmark process, removed when the process exits.
///
/// `XDG_CONFIG_HOME` points to it from the start of the process, so that Foundation's `UserDefaults` suites live
/// there, beside every file store of the suite, and the real `~/.config` is never touched.
public final class Workspace: Sendable {
	/// The folder of this process.
	public let folder: URL
	/// The `UserDefaults` suites created in this process, whose domains are removed at exit.
	private let suites = Mutex<[String]>([])

	/// The workspace of this process; the first use creates it.
	public static let shared = Workspace()

	private init() {
		if let existing = getenv(Self.variable).map({ String(cString: $0) }),
			getenv("XDG_CONFIG_HOME").map({ String(cString: $0) }) == existing
		{
			folder = URL(filePath: existing, directoryHint: .isDirectory)
		} else {
			folder = FileManager.default.temporaryDirectory.appending(
				path: "defaults-benchmarks-\(getpid())-\(UUID().uuidString)", directoryHint: .isDirectory)
			try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
			let path = folder.path(percentEncoded: false)
			setenv(Self.variable, path, 1)
			setenv("XDG_CONFIG_HOME", path, 1)
			// The system-wide defaults and locks of the workspace's stores, never the machine's `/etc/xdg`.
			setenv("XDG_CONFIG_DIRS", folder.appending(path: "xdg").path(percentEncoded: false), 1)
			// Foundation reads `XDG_CONFIG_HOME` once, when it loads: a `setenv` now would not move `UserDefaults`
			// suites off the real `~/.config`. So the program starts again, with the same arguments, process id and
			// open pipes to the harness, in an environment that has it from the start.
			execv("/proc/self/exe", CommandLine.unsafeArgv)
			fatalError("Could not start the benchmark again with XDG_CONFIG_HOME set: errno \(errno)")
		}
		// Registered before any store, so it runs after the stores' own exit flushes.
		atexit {
			Workspace.shared.removeAll()
		}
	}

	/// Names the workspace folder of the process; set together with `XDG_CONFIG_HOME`.
	private static let variable = "DEFAULTS_BENCHMARKS_WORKSPACE"

	/// A file URL in the workspace.
	public func file(_ name: String) -> URL {
		folder.appending(path: name, directoryHint: .notDirectory)
	}

	/// A file URL in the workspace's system folder (`$XDG_CONFIG_DIRS`): the system-wide defaults and locks of the
	/// store of the same name in the workspace.
	public func systemFile(_ name: String) -> URL {
		let system = folder.appending(path: "xdg", directoryHint: .isDirectory)
		try! FileManager.default.createDirectory(at: system, withIntermediateDirectories: true)
		return system.appending(path: name, directoryHint: .notDirectory)
	}

	/// A `UserDefaults` suite of a new, unique name in the workspace.
	public func userDefaults(_ label: String) -> (defaults: UserDefaults, name: String) {
		let name = "bench-\(label)-\(UUID().uuidString)"
		suites.withLock { $0.append(name) }
		return (UserDefaults(suiteName: name)!, name)
	}

	/// The property-list file of the `UserDefaults` suite `name`.
	public func userDefaultsFile(_ name: String) -> URL {
		file(name + ".plist")
	}

	private func removeAll() {
		for name in suites.withLock({ $0 }) {
			UserDefaults.standard.removePersistentDomain(forName: name)
		}
		try? FileManager.default.removeItem(at: folder)
	}
}

/// A dictionary in a class, so that benchmark closures can change it in place: the floor every store is measured
/// against.
public final class DictionaryBox: @unchecked Sendable {
	public var values: [String: Any]

	public init(_ values: [String: Any] = [:]) {
		self.values = values
	}
}
