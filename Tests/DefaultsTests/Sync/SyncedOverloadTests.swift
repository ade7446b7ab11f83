import DefaultsEtcd
import Foundation
import Testing

@testable import Defaults

/// The synced update called the way it reads (issue 28), in each place a caller writes it: top-level code (which Swift
/// compiles to the synchronous form), `@MainActor` code with and without `await`, nonisolated async code, and a
/// thread that runs no task. Each makes a synced increment against a real etcd and checks the value there.
@Suite(.serialized, .requiresEtcd, .scaledTimeLimit(minutes: 2)) struct SyncedOverloadTests {
	/// A model of an app, on the main actor, adding its step to a synced counter: the shape that did not compile
	/// ("sending value of non-Sendable type") before the asynchronous form ran in its caller's isolation.
	@MainActor final class Counter {
		let key: Defaults.Key<Int>
		var step = 2
		/// Whether each run of the update's closure was on the main actor, the caller's (in the test process another
		/// thread than the main one drains the main queue, the main actor's executor).
		var ranOnMainActor: [Bool] = []

		init(key: Defaults.Key<Int>) {
			self.key = key
		}

		func add() async throws -> Int {
			try await Defaults.update(key) { value in
				self.ranOnMainActor.append(Thread.isMainThread || CallerThread.isOnMainQueue)
				value += self.step
			}
		}

		/// The synchronous form on the main actor, which waits for the remote on the main thread.
		func addWithoutAwait() throws -> Int {
			try Defaults.update(key) { value in
				self.ranOnMainActor.append(Thread.isMainThread || CallerThread.isOnMainQueue)
				value += self.step
			}
		}
	}

	static func committed(_ etcd: EtcdServer, _ key: String) async throws -> Int? {
		try await SyncAtomicUpdateTests.remoteValue(EtcdClient(endpoints: [etcd.endpoint]), key).value
	}

	@Test func topLevelCodeUpdatesASyncedKeyAsItReads() async throws {
		let program = try await TopLevelProgram.build()
		#expect(
			program.compilerOutput.contains("no 'async' operations occur within 'await' expression"),
			"Swift compiles the top-level `try await Defaults.update` to the synchronous form: \(program.compilerOutput)"
		)
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let folder = try TemporaryDirectory()
		for expected in 1...2 {
			let result = try await ChildProcess(
				[etcd.endpoint, "/test/top-level/", "seats"], executable: program.executable.path,
				environment: ["XDG_CONFIG_HOME": folder.url.path]
			).wait(timeout: 30 * Double(sanitizerSlowdown))
			#expect(result.status == 0, "\(result)")
			#expect(result.lines == ["updated \(expected)"], "\(result)")
		}
		#expect(try await Self.committed(etcd, "/test/top-level/seats") == 2)
	}

	@Test @MainActor func mainActorCodeUpdatesASyncedKeyWithAwait() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let setup = SyncAtomicUpdateTests.Setup(
			remote: try EtcdClient(endpoints: [etcd.endpoint]), prefix: "/test/main-actor/")
		let counter = Counter(key: setup.key)
		#expect(try await counter.add() == 2)
		#expect(try await counter.add() == 4)
		#expect(counter.ranOnMainActor == [true, true], "the closure runs in its caller's isolation")
		#expect(setup.store[setup.key] == 4)
		#expect(try await Self.committed(etcd, "/test/main-actor/count") == 4)
	}

	/// The synchronous form blocks the main thread while the update runs in a task: it must not need the main thread
	/// (or the main actor) to finish. Were it to, the wait could end only at its limit
	/// (`SyncEngine.waitingUpdateLimit`, 20 s), with an error (the update it waited for never ran), which fails the
	/// test: five updates that return their values show it never waited for the main thread. Not timed: the sanitizer
	/// run saw one take 9.7 s on a loaded machine.
	@Test @MainActor func theSynchronousFormOnTheMainActorWaitsWithoutDeadlock() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let setup = SyncAtomicUpdateTests.Setup(
			remote: try EtcdClient(endpoints: [etcd.endpoint]), prefix: "/test/main-thread/")
		let counter = Counter(key: setup.key)
		for expected in stride(from: 2, through: 10, by: 2) {
			#expect(try counter.addWithoutAwait() == expected)
		}
		#expect(counter.ranOnMainActor.allSatisfy { $0 } && counter.ranOnMainActor.count == 5)
		#expect(setup.store[setup.key] == 10)
		#expect(try await Self.committed(etcd, "/test/main-thread/count") == 10)
	}

	@Test func nonisolatedCodeUpdatesASyncedKeyWithAwait() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let setup = SyncAtomicUpdateTests.Setup(
			remote: try EtcdClient(endpoints: [etcd.endpoint]), prefix: "/test/nonisolated/")
		let local = Defaults.Key<Int>("local", default: 0, suite: setup.store)
		var runs = 0
		var nested: [Result<Int, any Error>] = []
		let value = try await Defaults.update(setup.key) { value in
			runs += 1
			// An update inside the closure is refused, as in a local update: the closure may run more than once.
			nested.append(Result { try Defaults.update(local) { $0 += 1 } })
			value += 1
		}
		#expect(value == 1 && runs == 1)
		#expect(try await Self.committed(etcd, "/test/nonisolated/count") == 1)
		#expect(nested.count == 1)
		#expect(throws: Defaults.UpdateError.self) { try nested[0].get() }
		#expect(setup.store[local] == 0)
	}

	/// A thread of the program's own (or Dispatch's), which runs no task, may wait too.
	@Test func theSynchronousFormOnAThreadWithNoTaskWaitsForTheRemote() async throws {
		let etcd = try await EtcdServer.start()
		defer { etcd.stop() }
		let setup = SyncAtomicUpdateTests.Setup(
			remote: try EtcdClient(endpoints: [etcd.endpoint]), prefix: "/test/thread/")
		let key = setup.key
		let value = try await withCheckedThrowingContinuation { continuation in
			Thread.detachNewThread {
				continuation.resume(with: Result { try Defaults.update(key) { $0 += 1 } })
			}
		}
		#expect(value == 1)
		#expect(try await Self.committed(etcd, "/test/thread/count") == 1)
	}
}

/// `Tests/TopLevelUpdate/main.swift`, a program whose top-level code calls the synced update, compiled against the
/// package's built modules: no target builds it, since the warning Swift gives there fails the warnings-as-errors
/// build.
struct TopLevelProgram {
	struct CompilerNotFound: Error, CustomStringConvertible {
		var description: String { "swiftc is not on the PATH; the test compiles a program with it" }
	}

	let executable: URL
	let compilerOutput: String
	/// Holds the executable.
	let folder: TemporaryDirectory

	static func build() async throws -> TopLevelProgram {
		let source = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
			.deletingLastPathComponent().appending(path: "TopLevelUpdate/main.swift")
		// The helper sits in the build folder, beside the modules and each target's object files.
		let build = try ChildProcess.helperURL().deletingLastPathComponent()
		let objects = try ["Defaults", "DefaultsEtcd"].flatMap { target in
			let folder = build.appending(path: "\(target).build")
			return try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".o") }
				.map { folder.appending(path: $0).path }
		}
		let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
		guard
			let compiler = paths.map({ "\($0)/swiftc" }).first(where: {
				FileManager.default.isExecutableFile(atPath: $0)
			})
		else {
			throw CompilerNotFound()
		}
		let folder = try TemporaryDirectory()
		let executable = folder.file("main")
		var arguments = [
			"-swift-version", "6", "-I", build.appending(path: "Modules").path, "-module-cache-path",
			build.appending(path: "ModuleCache").path, source.path, "-o", executable.path,
		]
		arguments += objects
		if runsUnderThreadSanitizer {
			arguments.append("-sanitize=thread")
		}
		let result = try await ChildProcess(arguments, executable: compiler).wait(timeout: 120)
		#expect(result.status == 0, "\(result)")
		return TopLevelProgram(
			executable: executable, compilerOutput: result.standardOutput + result.standardError, folder: folder)
	}
}
