import Foundation
import Testing

/// The `.requiresEtcd` trait: every test that starts etcd carries it, and a run without etcd says what it skipped.
@Suite struct EtcdRequirementTests {
	/// A test that starts etcd without the trait would fail on a machine without etcd instead of being skipped.
	@Test func everyTestThatStartsEtcdRequiresIt() throws {
		let tests = Fixtures.folder.deletingLastPathComponent().appending(path: "Tests/DefaultsTests")
		let files =
			FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)?
			.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
		#expect(files.count > 10)
		var unmarked: [String] = []
		for file in files {
			let source = try String(contentsOf: file, encoding: .utf8)
			for (suite, tests) in Self.suitesAndTests(of: source) {
				for test in tests where test.contains("EtcdServer" + ".start(") {
					if !suite.contains(".requiresEtcd") && !test.prefix(while: { $0 != "\n" }).contains(".requiresEtcd")
					{
						unmarked.append("\(file.lastPathComponent): \(test.prefix(while: { $0 != "(" }))")
					}
				}
			}
		}
		#expect(unmarked.isEmpty, "tests that start etcd without `.requiresEtcd`: \(unmarked)")
	}

	@Test func theLastLineCountsTheSkippedTestsAndNamesTheCommand() {
		#expect(
			EtcdRequirement.summary(skippedCount: 24)
				== "24 sync tests could not run: etcd is not installed. Run `.ci/test` to install it and run the whole suite."
		)
		#expect(EtcdRequirement.summary(skippedCount: 1).hasPrefix("1 sync test could not run"))
	}

	/// Each `@Suite` line with the `@Test` declarations (and bodies) that follow it, up to the next `@Suite`.
	static func suitesAndTests(of source: String) -> [(suite: String, tests: [String])] {
		source.components(separatedBy: "\n@Suite").dropFirst().map { chunk in
			let suiteLine = String(chunk.prefix(while: { $0 != "\n" }))
			let tests: [String] = Array(chunk.components(separatedBy: "@Test").dropFirst())
			return (suiteLine, tests)
		}
	}
}
