import Defaults
import Foundation
import Synchronization
import Testing

/// Every ```swift block of README.md, Docs/*.md and the DocC catalog compiles against the package as it is, so that
/// no sample can drift from the API. A block that is an excerpt on purpose is marked with the line
/// `<!-- fragment -->` right before its opening fence (see ``DocumentationSample`` for how blocks are assembled).
///
/// All pages are type-checked by one `swiftc -typecheck` run against the modules the test build made: a few seconds,
/// not one compile per block.
@Suite(.scaledTimeLimit(minutes: 2)) struct DocumentationSamplesCompileTests {
	static let repository = Fixtures.folder.deletingLastPathComponent()

	/// The pages whose samples are compiled.
	static func pages() throws -> [URL] {
		let manager = FileManager.default
		var pages = [repository.appending(path: "README.md")]
		let docs = repository.appending(path: "Docs")
		pages += try manager.contentsOfDirectory(at: docs, includingPropertiesForKeys: nil)
			.filter { $0.pathExtension == "md" }
		let sources = repository.appending(path: "Sources")
		for module in try manager.contentsOfDirectory(at: sources, includingPropertiesForKeys: nil) {
			for catalog in (try? manager.contentsOfDirectory(at: module, includingPropertiesForKeys: nil)) ?? []
			where catalog.pathExtension == "docc" {
				let files = manager.enumerator(at: catalog, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL }
				pages += (files ?? []).filter { $0.pathExtension == "md" }
			}
		}
		return pages.sorted { $0.path < $1.path }
	}

	/// The folder of the modules `swift build --build-tests` made: beside the test executable.
	static func modulesFolder() throws -> URL {
		let executable = URL(filePath: CommandLine.arguments[0]).absoluteURL.resolvingSymlinksInPath()
		var folder = executable.deletingLastPathComponent()
		// On macOS the executable is inside DefaultsPackageTests.xctest/Contents/MacOS.
		while folder.pathComponents.count > 1 {
			let modules = folder.appending(path: "Modules")
			if FileManager.default.fileExists(atPath: modules.appending(path: "Defaults.swiftmodule").path) {
				return modules
			}
			folder.deleteLastPathComponent()
		}
		throw ModulesNotFound(executable: executable.path)
	}

	struct ModulesNotFound: Error, CustomStringConvertible {
		let executable: String
		var description: String { "no Modules/Defaults.swiftmodule above \(executable); build with `swift build`" }
	}

	@Test func everySwiftBlockCompilesOrIsMarkedAFragment() throws {
		let folder = try TemporaryDirectory()
		var files: [URL] = []
		var manifests: [DocumentationSample] = []
		var count = 0
		for (number, page) in try Self.pages().enumerated() {
			let all = try DocumentationSample.samples(in: page)
			// A whole `Package.swift` is checked against PackageDescription, on its own.
			manifests += all.filter { $0.code.contains("import PackageDescription") }
			let samples = all.filter { !$0.code.contains("import PackageDescription") }
			guard !samples.isEmpty else {
				continue
			}
			count += samples.count
			let name = page.deletingPathExtension().lastPathComponent
			for (block, text) in DocumentationSample.swiftFiles(for: samples, pageNumber: number).enumerated() {
				let file = folder.file("Page\(number)_\(name)_\(block).swift")
				try text.write(to: file, atomically: true, encoding: .utf8)
				files.append(file)
			}
		}
		// To read the assembled files: DEFAULTS_TEST_SAMPLES_OUT=/some/folder swift test --filter DocumentationSamples
		if let keep = ProcessInfo.processInfo.environment["DEFAULTS_TEST_SAMPLES_OUT"] {
			for file in files {
				try? FileManager.default.copyItem(
					at: file, to: URL(filePath: keep).appending(path: file.lastPathComponent))
			}
		}
		#expect(count > 40, "found only \(count) samples")

		let modules = try Self.modulesFolder()
		let result = try Self.run(
			"swiftc",
			[
				// A member is visible only in a file that imports its module, as in a user's own file: without this,
				// one sample's `import Foundation` would lend `Data(…)`'s members to every other sample.
				"-typecheck", "-continue-building-after-errors", "-swift-version", "6",
				"-enable-upcoming-feature", "MemberImportVisibility", "-module-name",
				"DocumentationSamples", "-I", modules.path,
				"-module-cache-path", folder.file("ModuleCache").path,
			] + files.map(\.path))
		#expect(result.status == 0, "the documentation's samples do not compile:\n\(result.output)")

		#expect(!manifests.isEmpty, "GettingStarted shows a Package.swift")
		let manifestAPI = try Self.toolchainManifestAPI()
		for (number, manifest) in manifests.enumerated() {
			let file = folder.file("Manifest\(number).swift")
			try manifest.code.write(to: file, atomically: true, encoding: .utf8)
			let result = try Self.run(
				"swiftc",
				[
					"-typecheck", "-swift-version", "6", "-package-description-version", "6.0", "-I", manifestAPI.path,
					"-module-cache-path",
					folder.file("ModuleCache").path, file.path,
				])
			#expect(
				result.status == 0,
				"the Package.swift at \(manifest.page.lastPathComponent):\(manifest.line) does not compile:\n\(result.output)"
			)
		}
	}

	/// The toolchain's PackageDescription module: `<toolchain>/usr/lib/swift/pm/ManifestAPI`, beside `bin/swiftc`.
	static func toolchainManifestAPI() throws -> URL {
		let swiftc = try run("which", ["swiftc"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
		let toolchain = URL(filePath: swiftc).resolvingSymlinksInPath().deletingLastPathComponent()
			.deletingLastPathComponent()
		return toolchain.appending(path: "lib/swift/pm/ManifestAPI")
	}

	@Test func aBlockAfterTheFragmentMarkerIsLeftOut() throws {
		let folder = try TemporaryDirectory()
		let page = folder.file("Page.md")
		try """
		```swift
		let compiled = 1
		```
		<!-- fragment -->
		```swift
		struct Bag { … }
		```
		""".write(to: page, atomically: true, encoding: .utf8)
		let samples = try DocumentationSample.samples(in: page)
		#expect(samples.map(\.code) == ["let compiled = 1"])
	}

	@Test func declarationsGoToFileScopeAndStatementsIntoAFunctionOfTheirOwn() {
		let sample = DocumentationSample(
			page: URL(filePath: "/Page.md"), line: 1,
			code: """
				import Defaults

				let store = Defaults.InMemoryStore()
				enum Theme: String { case light }
				extension Defaults.Keys {
					static let theme = Key<String>("theme", default: "light", suite: store)
				}
				Defaults[.theme] = "dark"
				""")
		let file = DocumentationSample.swiftFiles(for: [sample], pageNumber: 3).joined()
		#expect(file.contains("import Defaults\n"))
		#expect(file.contains("fileprivate let store = Defaults.InMemoryStore()"))
		#expect(file.contains("fileprivate enum Theme"))
		#expect(file.contains("fileprivate extension Defaults.Keys {"))
		#expect(file.contains("private func sample3_0() async throws {\nDefaults[.theme] = \"dark\"\n}"))
	}

	@Test func aLaterBlockSeesEarlierDeclarationsAndItsOwnReplaceThoseOfTheSameName() {
		let page = URL(filePath: "/Page.md")
		let first = DocumentationSample(
			page: page, line: 1, code: "enum Mime: String { case json }\nstruct Window { var width = 1 }")
		let second = DocumentationSample(page: page, line: 9, code: "enum Mime: String, Codable { case json }")
		let files = DocumentationSample.swiftFiles(for: [first, second], pageNumber: 0)
		#expect(files.count == 2)
		#expect(files[1].contains("fileprivate struct Window"))
		#expect(files[1].contains("fileprivate enum Mime: String, Codable"))
		#expect(!files[1].contains("fileprivate enum Mime: String {"))
	}

	/// Runs `tool` from the PATH, at most 90 s.
	static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
		let process = Process()
		process.executableURL = URL(filePath: "/usr/bin/env")
		process.arguments = [tool] + arguments
		let output = Pipe()
		process.standardOutput = output
		process.standardError = output
		try process.run()
		let data = LockedState(Data())
		// Signalled once the reader has all of the output: `Thread.isExecuting` is false until a thread has started,
		// so polling it could return before anything was read.
		let readAll = DispatchSemaphore(value: 0)
		let reader = Thread {
			let all = output.fileHandleForReading.readDataToEndOfFile()
			data.withLock { $0 = all }
			readAll.signal()
		}
		reader.start()
		let deadline = Date().addingTimeInterval(90)
		while process.isRunning && Date() < deadline {
			Thread.sleep(forTimeInterval: 0.05)
		}
		if process.isRunning {
			process.terminate()
			process.waitUntilExit()
			return (-1, "\(tool) did not finish within 90 s")
		}
		process.waitUntilExit()
		guard readAll.wait(timeout: .now() + 10) == .success else {
			return (-1, "\(tool)'s output did not end within 10 s of its exit")
		}
		return (process.terminationStatus, String(decoding: data.withLock { $0 }, as: UTF8.self))
	}
}
