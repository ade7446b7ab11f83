import Foundation
import Synchronization

/// A temporary folder per benchmark process, removed when the process exits.
///
/// `XDG_CONFIG_HOME` points into it before anything else runs, so that Foundation's `UserDefaults` suites and
/// every file store of the suite live there and the real `~/.config` is never touched.
public final class Workspace: Sendable {
	/// The folder of this process.
	public let folder: URL
	/// The `UserDefaults` suites created in this process, whose domains are removed at exit.
	private let suites = Mutex<[String]>([])

	/// The workspace of this process; the first use creates it.
	public static let shared = Workspace()

	private init() {
		folder = FileManager.default.temporaryDirectory.appending(
			path: "defaults-benchmarks-\(getpid())-\(UUID().uuidString)", directoryHint: .isDirectory)
		try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
		setenv("XDG_CONFIG_HOME", folder.path(percentEncoded: false), 1)
		// Registered before any store, so it runs after the stores' own exit flushes.
		atexit {
			Workspace.shared.removeAll()
		}
	}

	/// A file URL in the workspace.
	public func file(_ name: String) -> URL {
		folder.appending(path: name, directoryHint: .notDirectory)
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
