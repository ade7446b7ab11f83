import Defaults
import DefaultsTestIsolation
import Foundation
import Testing

/// The suite writes nothing into the real home folder (`HOME`, `XDG_CONFIG_HOME`) and leaves nothing in the real
/// temporary folder: `DefaultsTestIsolation` makes all three a folder of the test process's own before any test
/// runs, and removes it when the process exits.
@Suite struct TestIsolationTests {
	@Test func homeConfigAndTemporaryFoldersAreAFolderOfTheTestProcess() throws {
		let folder = try #require(defaults_test_isolation_folder().map { String(cString: $0) })
		let environment = ProcessInfo.processInfo.environment
		#expect(environment["HOME"] == folder)
		#expect(environment["XDG_CONFIG_HOME"] == folder + "/.config")
		#expect(environment["TMPDIR"] == folder + "/tmp")
		#expect(FileManager.default.temporaryDirectory.path.hasPrefix(folder))
		let originalHome = defaults_test_original_home().map { String(cString: $0) }
		#expect(originalHome != folder)
		// DefaultsTests-run-<pid>-<six characters of mkdtemp>: a new folder of this run, never one made beforehand.
		#expect(URL(filePath: folder).lastPathComponent.hasPrefix("DefaultsTests-run-\(getpid())-"))
		#expect(URL(filePath: folder).lastPathComponent.count == "DefaultsTests-run-\(getpid())-".count + 6)
	}

	@Test func theStandardStoreAndUserDefaultsWriteInsideIt() throws {
		let folder = try #require(defaults_test_isolation_folder().map { String(cString: $0) })
		#expect(Defaults.FileStore.directory.path.hasPrefix(folder))
		#expect(Defaults.FileStore.standard.url.path.hasPrefix(folder))

		let name = "isolation\(UUID().uuidString.prefix(8))"
		Defaults.FileStore.standard.setStoredValue("written", forKey: name)
		defer {
			Defaults.FileStore.standard.removeStoredValue(forKey: name)
			_ = Defaults.FileStore.standard.flush()
		}
		#expect(Defaults.FileStore.standard.flush())
		#expect(try Self.storedNames(in: Defaults.FileStore.standard.url).contains(name))

		// The file of the same name in the real configuration folder, if any, never sees the value.
		let realConfiguration =
			defaults_test_original_config_home().map { URL(filePath: String(cString: $0)) }
			?? defaults_test_original_home().map { URL(filePath: String(cString: $0)).appending(path: ".config") }
		if let realConfiguration {
			let realFile = realConfiguration.appending(path: Defaults.FileStore.standard.url.lastPathComponent)
			#expect(!((try? Self.storedNames(in: realFile)) ?? []).contains(name))
			#expect(!Defaults.FileStore.standard.url.path.hasPrefix(realConfiguration.path))
		}
	}

	/// Tests run as root hand folders to temporary users and `nobody`; with `TMPDIR` in a folder only root can enter
	/// (`TMPDIR=$(mktemp -d)`), the run's own folder is out of their reach, and those folders go elsewhere.
	@Test func theSharedFolderIsOneEveryUserCanReach() throws {
		let shared = try #require(defaults_test_shared_folder().map { String(cString: $0) })
		let folder = try #require(defaults_test_isolation_folder().map { String(cString: $0) })
		// A run as another user hands nothing to others: the run's temporary folder serves.
		guard geteuid() == 0 else {
			#expect(shared == folder + "/tmp")
			return
		}
		var path = shared
		while true {
			var status = stat()
			#expect(stat(path, &status) == 0 && status.st_mode & S_IXOTH != 0, "others cannot pass through \(path)")
			guard path != "/" else {
				break
			}
			path = URL(filePath: path).deletingLastPathComponent().path(percentEncoded: false)
			if path.count > 1, path.hasSuffix("/") {
				path.removeLast()
			}
		}
		// Inside the run's folder, or one of this run's in /tmp that the process removes when it exits.
		#expect(
			shared.hasPrefix(folder + "/")
				|| URL(filePath: shared).lastPathComponent.hasPrefix("DefaultsTests-shared-\(getpid())-"), "\(shared)")
	}

	static func storedNames(in file: URL) throws -> [String] {
		let data = try Data(contentsOf: file)
		let plist = try PropertyListSerialization.propertyList(from: data, format: nil)
		return (plist as? [String: Any]).map { Array($0.keys) } ?? []
	}
}
