import Defaults
import Foundation
import Synchronization
import Testing

/// Marks a suite or test that runs a real etcd (``EtcdServer``).
///
/// ```swift
/// @Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 1)) struct SyncAcrossMachinesTests { … }
/// ```
///
/// Without etcd, each such test is skipped (cancelled, with the reason) rather than failing, and the test process
/// ends with one line that counts them and names the command that installs etcd and runs them all (`.ci/test`). In
/// CI (`CI=true` in the environment) a missing etcd is a failure, so that a CI machine without etcd cannot pass.
struct RequiresEtcdTrait: TestTrait, SuiteTrait, TestScoping {
	var isRecursive: Bool { true }

	func provideScope(
		for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
	) async throws {
		// The suite's scope only wraps its tests, each of which gets a scope of its own.
		guard !test.isSuite, let reason = EtcdRequirement.missingReason else {
			try await function()
			return
		}
		if EtcdRequirement.isRequired {
			Issue.record("\(reason) — in CI, and under `\(EtcdRequirement.command)`, a missing etcd is a failure.")
			return
		}
		EtcdRequirement.recordSkipped(test)
		try Test.cancel("\(reason) — run `\(EtcdRequirement.command)` to install it and run these tests.")
	}
}

extension Trait where Self == RequiresEtcdTrait {
	/// The suite or test runs a real etcd: skipped (and counted) without one, a failure in CI.
	static var requiresEtcd: Self { RequiresEtcdTrait() }
}

/// Whether etcd can run here, and the count of tests skipped for want of it.
enum EtcdRequirement {
	/// The command that finds or installs etcd and runs the whole suite, as the README gives it.
	static let command = ".ci/test"

	/// Why etcd cannot run here, or `nil` when it can. Looked up once per test process.
	static let missingReason: String? = {
		do {
			_ = try EtcdServer.executable()
			return nil
		} catch {
			return "\(error)"
		}
	}()

	static var isCI: Bool {
		ProcessInfo.processInfo.environment["CI"].map { ["true", "1", "yes"].contains($0.lowercased()) } ?? false
	}

	/// Whether a missing etcd fails the tests: in CI, and under `.ci/test`, which found etcd before it ran them
	/// (`DEFAULTS_TEST_REQUIRE_ETCD=1`), so that the suite and the script can never disagree into a green run with
	/// every sync test skipped.
	static var isRequired: Bool {
		isCI || ProcessInfo.processInfo.environment["DEFAULTS_TEST_REQUIRE_ETCD"] == "1"
	}

	private static let skipped = LockedState<Set<Test.ID>>([])

	static func recordSkipped(_ test: Test) {
		let isFirst = skipped.withLock { skipped in
			defer { skipped.insert(test.id) }
			return skipped.isEmpty
		}
		if isFirst {
			atexit { EtcdRequirement.printSummary() }
		}
	}

	/// The last line of a run that skipped sync tests: how many, and how to run them.
	static func summary(skippedCount: Int) -> String {
		"\(skippedCount) sync test\(skippedCount == 1 ? "" : "s") could not run: etcd is not installed. "
			+ "Run `\(command)` to install it and run the whole suite."
	}

	private static func printSummary() {
		let count = skipped.withLock { $0.count }
		FileHandle.standardError.write(Data("\n\(summary(skippedCount: count))\n".utf8))
	}
}
