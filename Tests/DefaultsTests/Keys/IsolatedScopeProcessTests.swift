import Foundation
import Testing

/// The testing library's scope in a process of its own, whose home folder this test makes and lists: the package's
/// other tests share this process's home, so only a child's folder can show that nothing at all was written there.
@Suite(.scaledTimeLimit(minutes: 1)) struct IsolatedScopeProcessTests {
	/// Every path under `folder`, with its size, so that a file written or created shows.
	static func listing(of folder: URL) -> [String] {
		let enumerator = FileManager.default.enumerator(
			at: folder, includingPropertiesForKeys: [.fileSizeKey], options: [])
		var entries: [String] = []
		while let url = enumerator?.nextObject() as? URL {
			let size = (try? url.resourceValues(forKeys: [.fileSizeKey]))?.fileSize ?? -1
			entries.append(
				"\(url.path(percentEncoded: false).dropFirst(folder.path(percentEncoded: false).count)) \(size)")
		}
		return entries.sorted()
	}

	@Test func aScopedWriteLeavesHomeAndTheConfigurationFolderAsTheyWere() throws {
		let home = try TemporaryDirectory()
		let config = home.url.appending(path: ".config", directoryHint: .isDirectory)
		try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
		let environment = [
			"HOME": home.url.path(percentEncoded: false), "XDG_CONFIG_HOME": config.path(percentEncoded: false),
		]
		let before = Self.listing(of: home.url)
		#expect(before.count == 1, "\(before)")

		let scoped = try ChildProcess.run(["isolated-write", "theme", "dark"], environment: environment)
		#expect(scoped.status == 0, "\(scoped)")
		#expect(scoped.lines == ["inside dark", "outside none"])
		#expect(Self.listing(of: home.url) == before)

		// The same write without the scope creates the standard store's file: the listing would have shown it.
		let plain = try ChildProcess.run(
			["file-store-write", "default", "theme", "string:dark"], environment: environment)
		#expect(plain.status == 0, "\(plain)")
		#expect(Self.listing(of: home.url) != before)
		#expect(FileManager.default.fileExists(atPath: config.appending(path: "DefaultsTestHelper.plist").path))
	}

	/// The `.isolatedDefaults` trait itself, applied by Swift Testing's runner to a test in the child (the helper's
	/// `TraitChildTests`), not the closure it calls: the test's write and its flush leave the home folder as it was.
	@Test func theTraitRunByTheTestRunnerLeavesHomeAndTheConfigurationFolderAsTheyWere() throws {
		let home = try TemporaryDirectory()
		let config = home.url.appending(path: ".config", directoryHint: .isDirectory)
		try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
		let environment = [
			"HOME": home.url.path(percentEncoded: false), "XDG_CONFIG_HOME": config.path(percentEncoded: false),
		]
		let before = Self.listing(of: home.url)

		let result = try ChildProcess.run(["isolated-trait", "theme", "dark"], environment: environment, timeout: 90)
		#expect(result.status == 0, "\(result)")
		// The test ran (it printed), under the trait (outside it the key reads its default).
		#expect(result.lines == ["inside dark", "outside none"], "\(result)")
		#expect(Self.listing(of: home.url) == before)
	}

	/// A preview's scope covers the whole process, threads of their own included, and writes nothing either.
	@Test func aProcessWideScopeCoversEveryThreadAndWritesNothing() throws {
		let home = try TemporaryDirectory()
		let config = home.url.appending(path: ".config", directoryHint: .isDirectory)
		try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
		let environment = [
			"HOME": home.url.path(percentEncoded: false), "XDG_CONFIG_HOME": config.path(percentEncoded: false),
		]
		let before = Self.listing(of: home.url)

		let result = try ChildProcess.run(["process-isolate", "theme", "dark"], environment: environment)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["thread dark", "main dark again"])
		#expect(Self.listing(of: home.url) == before)
	}
}
