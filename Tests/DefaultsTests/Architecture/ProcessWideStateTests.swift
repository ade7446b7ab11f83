import Foundation
import Testing

/// A store's state lives in the store (its attachments, its runtime, its engine); state of the whole process only
/// where the process is the thing. Checked in the source: every piece of process-wide mutable state in
/// Sources/Defaults (a static or top-level stored property holding a lock, an atomic, a table keyed by object
/// identity, a closure-initialised value, or a static `var`) must be in `allowed` with the reason it is the process's;
/// a new one fails the suite until it is moved into the object it belongs to, or listed here with its reason (and in
/// Docs/Design.md, "What stays process-wide").
@Suite struct ProcessWideStateTests {
	/// `File.swift name`: why the process, not a store, an engine or a runtime, owns it.
	static let allowed: [String: String] = [
		// Signals and exit.
		"FileStore+Termination.swift installation": "signal handlers are the process's",
		"FileStore+Termination.swift terminationPipe": "the self-pipe of the signal handler",
		"FileStore+Termination.swift installingProcess": "which process installed the signal handlers (fork)",
		"FileStore+Termination.swift terminatingSignal": "the signal the process is ending on",
		"FileStore+Termination.swift isEnding": "the process is ending: no flush is retried",
		"FileStore+Flushing.swift trim":
			"the address of the C library's malloc_trim, looked up once; the allocator is the process's",
		// libdispatch.
		"DispatchStart.swift started": "libdispatch's event loop is the process's",
		"DispatchStart.swift attempt": "one start of libdispatch's event loop at a time",
		"FileStoreRegistry.swift stores": "one store per file in a process, or two copies of a file miss each other",
		"FileStoreRegistry.swift exitFlush": "the exit flush of every file store",
		"UserDefaults+Store.swift pending": "UserDefaults written since the last flush, for the exit flush",
		"UserDefaults+Store.swift installExitHandler": "the exit flush of UserDefaults",
		"UserDefaults+Store.swift flushing": "the exit flush waits for one under way",
		"SyncEngine+Exit.swift liveEngines": "the engines that push what is pending at exit",
		"SyncEngine+Exit.swift exitHookInstalled": "the push at exit",
		// The inotify instance and its fallback.
		"SettingsFile+Watching.swift timers": "the polling fallback where there is no inotify instance",
		// The failure handler and reports about the process, not a store.
		"Failure.swift failureHandlerStorage": "the failure handler",
		"FileStore+Locations.swift hasReportedConfigurationHome": "the process's environment is reported once",
		"KeyNameRules.swift reported": "a name breaks a rule in every store alike; reported once",
		"KeyedArchive+ClassNames.swift reported": "a class Foundation cannot archive is the process's; reported once",
		// What a store the package did not make cannot hold itself.
		"StoreAttachments.swift table": "attachments of stores the package did not make, held weakly by the store",
		"UserDefaults+Store.swift registered": "Foundation's registration domain is process-wide on Linux",
		// The process's standard store, the API of the well-known package, and per-thread or per-task state.
		"Defaults.swift standardStore": "the store keys use when none is named",
		"Defaults+iCloud.swift registry": "`Defaults.iCloud` is one per process by its API",
		"Defaults+iCloudCompatibility.swift debugLog": "`Defaults.iCloud.isDebug` is one per process by its API",
		"Store+AtomicUpdate.swift key": "the key of a thread-local (the store a thread is updating)",
		"WithoutPropagation.swift isSuppressed": "task-local",
		"SyncWorker+Journal.swift isApplyingReceived": "task-local: the engine applies a received value",
		// A test's isolated scope (the DefaultsTesting library) is a notion of a test process, not of a store.
		"StandInScope.swift activeScopes": "whether any test scope runs, so that code outside one skips the task-local",
		"StandInScope.swift processScope": "the scope a preview installs for the whole of its process",
		// Constants the scan cannot tell from state.
		"Store+AtomicUpdate.swift insideAnotherUpdate": "a constant failure value, built once; nothing changes it",
		// The main queue.
		"CallerThreadWait.swift mainQueueMark": "the mark on Dispatch's main queue, which is the process's",
	]

	/// What makes a stored property process-wide state rather than a constant.
	static let stateMarkers = [
		"LockedState", "Atomic", "Mutex", "NSLock", "NSRecursiveLock", "NSCondition", "ObjectIdentifier",
		"nonisolated(unsafe)", "pthread_key_t", "DispatchSemaphore",
	]

	@Test func processWideStateIsOnlyWhereTheProcessIsTheThing() throws {
		let found = try Self.processWideState()
		let unexplained = found.subtracting(Self.allowed.keys).sorted()
		#expect(
			unexplained.isEmpty,
			"process-wide state not in ProcessWideStateTests.allowed (move it into its store, runtime or engine, or say why the process owns it): \(unexplained)"
		)
		let stale = Set(Self.allowed.keys).subtracting(found).sorted()
		#expect(stale.isEmpty, "listed in ProcessWideStateTests.allowed but not found: \(stale)")
	}

	/// The scanner itself: a check that finds nothing would pass blind.
	@Test func theScannerFindsEachKindOfProcessWideState() {
		let samples = [
			"enum A {", "\tprivate static let table = LockedState<[ObjectIdentifier: Int]>([:])",
			"\tstatic var hook: (() -> Void)? = nil", "\tnonisolated(unsafe) static let other: Any = 1",
			"\tstatic let installed: Void = {", "\t}()", "\tstatic let limit = 8", "\tstatic var computed: Int {",
			"\t\t1", "\t}", "}", "private let counter = Atomic<Int>(0)", "let constant = 3",
		]
		#expect(Self.state(in: samples) == ["table", "hook", "other", "installed", "counter"])
	}

	static func processWideState() throws -> Set<String> {
		var found: Set<String> = []
		for folder in LayeringTests.layers.flatMap({ $0 }) {
			for (file, lines) in try LayeringTests.code(in: folder) {
				for name in state(in: lines) {
					found.insert("\(file) \(name)")
				}
			}
		}
		return found
	}

	/// The names of the static (at any depth) and top-level stored properties in `lines` that hold process-wide
	/// state.
	static func state(in lines: [String]) -> [String] {
		var names: [String] = []
		var depth = 0
		for line in lines {
			let tokens = LayeringTests.Token.scan(line).map(\.text)
			if let index = tokens.firstIndex(where: { $0 == "let" || $0 == "var" }), index + 1 < tokens.count {
				let isStatic = tokens[..<index].contains("static")
				let isTopLevel =
					depth == 0
					&& tokens[..<index].allSatisfy {
						["private", "fileprivate", "nonisolated", "unsafe", "package", "public", "internal"].contains(
							$0)
					}
				let beforeBody = line.split(separator: "{", maxSplits: 1, omittingEmptySubsequences: false)[0]
				let isStored = tokens[index] == "let" || beforeBody.contains("=")
				let holdsState =
					stateMarkers.contains { line.contains($0) } || line.replacing(" ", with: "").contains("={")
					|| (tokens[index] == "var" && isStored)
				if (isStatic || isTopLevel) && isStored && holdsState {
					names.append(tokens[index + 1])
				}
			}
			depth += line.count(where: { $0 == "{" }) - line.count(where: { $0 == "}" })
		}
		return names
	}
}
