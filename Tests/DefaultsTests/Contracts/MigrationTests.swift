import Defaults
import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

/// Migrations run once per store, record the version reached, and give the same result when run again after a crash.
@Suite struct MigrationTests {
	let window = Window(width: 640, height: 480, title: "Main")

	/// The steps of an app that renamed a key, changed its form and dropped another one.
	static let steps: [Defaults.Migration] = [
		.init(version: 1, "Rename the window key", .rename(from: "mainWindow", to: "window")),
		.init(
			version: 2, "Window: JSON data to JSON text",
			.convert("window", from: Defaults.AnyBridge<Window>.jsonData, to: .json)),
		.init(version: 3, "Drop the thumbnail cache", .remove("thumbnailCache")),
	]

	func legacyStore() throws -> Defaults.InMemoryStore {
		try Defaults.InMemoryStore(values: [
			"mainWindow": try JSONEncoder().encode(window), "thumbnailCache": Data([1, 2, 3]), "volume": 7,
		])
	}

	@Test func stepsRunInOrderAndTheVersionIsRecorded() throws {
		let store = try legacyStore()
		#expect(try Defaults.migrate(Self.steps, store: store) == 3)
		#expect(try Defaults.migrationVersion(of: store) == 3)
		#expect(store.storedValue(forKey: Defaults.Migration.versionKey) as? Int == 3)
		#expect(store.storedValue(forKey: "mainWindow") == nil)
		#expect(store.storedValue(forKey: "thumbnailCache") == nil)
		#expect(store.storedValue(forKey: "volume") as? Int == 7, "keys no step names are left alone")
		let key = Defaults.Key<Window>("window", default: Window(width: 0, height: 0, title: ""), suite: store)
		#expect(store.storedValue(forKey: "window") is String)
		#expect(store[key] == window)
	}

	@Test func runningACompletedMigrationAgainChangesNothing() throws {
		let store = try legacyStore()
		let runs = Atomic<Int>(0)
		let steps =
			Self.steps + [.init(version: 4, "Count") { _ in runs.add(1, ordering: .relaxed) }]
		try Defaults.migrate(steps, store: store)
		let after = Defaults.Snapshot.storedForms(in: store)
		let rewrites = Recorder<String>()
		let stopCounting = StoreRuntime.of(store).addCommitTaps(
			Dictionary(
				uniqueKeysWithValues: store.storedKeys().map { name in (name, { @Sendable in rewrites.append(name) }) })
		)
		defer { stopCounting() }
		#expect(try Defaults.migrate(steps, store: store) == 4)
		#expect(runs.load(ordering: .relaxed) == 1)
		#expect(Defaults.Snapshot.differences(between: Defaults.Snapshot.storedForms(in: store), and: after).isEmpty)
		#expect(rewrites.values.isEmpty, "nothing rewritten")
	}

	@Test func stepsAtOrBelowTheRecordedVersionAreSkipped() throws {
		let store = try Defaults.InMemoryStore(values: [Defaults.Migration.versionKey: 2])
		let ran = LockedState<[Int]>([])
		let steps = (1...3).map { version in
			Defaults.Migration(version: version) { _ in ran.withLock { $0.append(version) } }
		}
		#expect(try Defaults.migrate(steps, store: store) == 3)
		#expect(ran.withLock { $0 } == [3])
	}

	@Test func aNewerRecordedVersionIsKeptAndReturned() throws {
		let store = try Defaults.InMemoryStore(values: [Defaults.Migration.versionKey: 9])
		#expect(try Defaults.migrate(Self.steps, store: store) == 9)
	}

	@Test(arguments: [[2, 1], [1, 1], [0, 1], [-1]])
	func stepsOutOfOrderAreRefusedBeforeAnythingRuns(versions: [Int]) throws {
		let store = try legacyStore()
		let runs = Atomic<Int>(0)
		let steps = versions.map { version in
			Defaults.Migration(version: version) { _ in runs.add(1, ordering: .relaxed) }
		}
		do {
			try Defaults.migrate(steps, store: store)
			Issue.record("expected the steps \(versions) to be refused")
		} catch {
			#expect(error.reason == .invalidSteps)
			#expect(error.description.contains("nothing was run"), "\(error)")
		}
		#expect(runs.load(ordering: .relaxed) == 0)
		#expect(store.storedValue(forKey: Defaults.Migration.versionKey) == nil)
	}

	@Test func aStepThatVacatesAKeyAndFillsItAgainIsRefused() throws {
		let steps = [
			Defaults.Migration(version: 1, .rename(from: "a", to: "b"), .rename(from: "c", to: "a"))
		]
		#expect(throws: Defaults.MigrationError.self) { try Defaults.migrate(steps, store: Defaults.InMemoryStore()) }
	}

	@Test func aStepThatThrowsHalfwayRunsAgainWithTheSameResult() throws {
		// A crash simulated by a throw after the step did part of its work.
		let shouldCrash = Atomic<Bool>(true)
		func steps() -> [Defaults.Migration] {
			[
				.init(
					version: 1, "Rename, then crash", .rename(from: "mainWindow", to: "window"),
					.custom("crash") { _ in
						if shouldCrash.exchange(false, ordering: .relaxed) {
							throw CocoaError(.fileWriteUnknown)
						}
					}, .remove("thumbnailCache")),
				.init(
					version: 2, .convert("window", from: Defaults.AnyBridge<Window>.jsonData, to: .json)),
			]
		}
		let store = try legacyStore()
		do {
			try Defaults.migrate(steps(), store: store)
			Issue.record("expected the crash")
		} catch {
			#expect(error.reason == .stepFailed)
			#expect(error.version == 1)
			#expect(error.underlyingError is CocoaError)
		}
		#expect(try Defaults.migrationVersion(of: store) == 0, "the step was not recorded")
		#expect(store.storedValue(forKey: "window") is Data, "the rename before the crash stays done")
		#expect(try Defaults.migrate(steps(), store: store) == 2)

		let clean = try legacyStore()
		try Defaults.migrate(steps(), store: clean)
		let differences = Defaults.Snapshot.differences(
			between: Defaults.Snapshot.storedForms(in: store), and: Defaults.Snapshot.storedForms(in: clean))
		#expect(differences.isEmpty, "\(differences)")
	}

	@Test func aFailingLaterStepKeepsTheEarlierOnesRecorded() throws {
		let store = try legacyStore()
		let steps = [
			Self.steps[0],
			Defaults.Migration(version: 2, "Fails") { _ in throw CocoaError(.fileNoSuchFile) },
		]
		#expect(throws: Defaults.MigrationError.self) { try Defaults.migrate(steps, store: store) }
		#expect(try Defaults.migrationVersion(of: store) == 1)
		#expect(try Defaults.migrate(Self.steps, store: store) == 3)
	}

	@Test func aRenameInterruptedBetweenCopyAndRemoveFinishes() throws {
		let data = try JSONEncoder().encode(window)
		let store = try Defaults.InMemoryStore(values: ["mainWindow": data, "window": data])
		try Defaults.migrate([Self.steps[0]], store: store)
		#expect(store.storedValue(forKey: "mainWindow") == nil)
		#expect(store.storedValue(forKey: "window") as? Data == data)
	}

	@Test func aRenameWhoseTargetHoldsAnotherValueKeepsBothByDefault() throws {
		FailureRecorder.start()
		let source = uniqueKeyName("source")
		let store = try Defaults.InMemoryStore(values: [source: "old", "target": "new"])
		#expect(try Defaults.migrate([.init(version: 1, .rename(from: source, to: "target"))], store: store) == 1)
		#expect(store.storedValue(forKey: source) as? String == "old")
		#expect(store.storedValue(forKey: "target") as? String == "new")
		let failures = FailureRecorder.failures(forKey: source)
		#expect(failures.count == 1)
		#expect(failures.first?.reason == .migration)
	}

	@Test func aRenameWhoseTargetHoldsAnotherValueFollowsItsPolicy() throws {
		func migrated(_ policy: Defaults.Migration.Operation.TargetPolicy) throws -> Defaults.InMemoryStore {
			let store = try Defaults.InMemoryStore(values: ["source": "old", "target": "new"])
			try Defaults.migrate(
				[.init(version: 1, .rename(from: "source", to: "target", ifTargetExists: policy))], store: store)
			return store
		}
		let replaced = try migrated(.replaceTarget)
		#expect(replaced.storedValue(forKey: "source") == nil)
		#expect(replaced.storedValue(forKey: "target") as? String == "old")
		let kept = try migrated(.keepTarget)
		#expect(kept.storedValue(forKey: "source") == nil)
		#expect(kept.storedValue(forKey: "target") as? String == "new")
		do {
			_ = try migrated(.fail)
			Issue.record("expected a conflict")
		} catch let error as Defaults.MigrationError {
			#expect(error.reason == .conflict)
			#expect(error.description.contains("string \"new\""), "names what the target holds: \(error)")
		}
	}

	@Test func registeredDefaultsAreNeverMovedIntoTheStore() throws {
		let store = Defaults.InMemoryStore()
		store.registerDefaultValues(["old": 5])
		try Defaults.migrate(
			[.init(version: 1, .rename(from: "old", to: "new")), .init(version: 2, .remove("old"))], store: store)
		#expect(store.storedKeys() == [Defaults.Migration.versionKey])
		#expect(store.storedValue(forKey: "old") as? Int == 5)
	}

	@Test func aValueThatDoesNotDecodeIsLeftAsItIsAndReported() throws {
		FailureRecorder.start()
		let name = uniqueKeyName("window")
		let store = try Defaults.InMemoryStore(values: [name: Data("garbage".utf8)])
		let convert = Defaults.Migration.Operation.convert(name, from: Defaults.AnyBridge<Window>.jsonData, to: .json)
		#expect(try Defaults.migrate([.init(version: 1, convert)], store: store) == 1)
		#expect(store.storedValue(forKey: name) as? Data == Data("garbage".utf8))
		let failure = try #require(FailureRecorder.failures(forKey: name).first)
		#expect(failure.reason == .migration)
		#expect(failure.decodingError?.alsoTried.first?.bridgeName == "JSON data")
	}

	@Test func aValueThatDoesNotDecodeStopsAMigrationThatAsksTo() throws {
		let store = try Defaults.InMemoryStore(values: ["window": "garbage"])
		let convert = Defaults.Migration.Operation.convert(
			"window", from: Defaults.AnyBridge<Window>.jsonData, to: .json, ifUndecodable: .fail)
		do {
			try Defaults.migrate([.init(version: 1, "Convert", convert)], store: store)
			Issue.record("expected a conflict")
		} catch {
			#expect(error.reason == .conflict)
			#expect(error.version == 1)
			#expect(error.underlyingError is Defaults.DecodingError)
			#expect(error.description.contains("Convert"), "\(error)")
		}
		#expect(store.storedValue(forKey: "window") as? String == "garbage")
		#expect(try Defaults.migrationVersion(of: store) == 0)
	}

	@Test func convertingThroughATypedKeyUsesItsOlderForms() throws {
		let store = try Defaults.InMemoryStore(values: ["mime": #""application\/json""#])
		let key = Defaults.Key<Mime>("mime", default: .text, suite: store, alsoReading: [.json])
		let steps = [Defaults.Migration(version: 1, .convert(key))]
		try Defaults.migrate(steps, store: store)
		#expect(store.storedValue(forKey: "mime") as? String == "application/json")
		let rewrites = Recorder<String>()
		let stopCounting = StoreRuntime.of(store).addCommitTaps(["mime": { rewrites.append("mime") }])
		defer { stopCounting() }
		try Defaults.migrate(steps, store: store, versionKey: "OtherMigrationVersion")
		#expect(rewrites.values.isEmpty, "a converted value is not written again")
	}

	@Test func anUnreadableVersionStopsTheMigrationAndIsLeftAlone() throws {
		let store = try Defaults.InMemoryStore(values: [Defaults.Migration.versionKey: "three"])
		do {
			try Defaults.migrate(Self.steps, store: store)
			Issue.record("expected an unreadable version")
		} catch {
			#expect(error.reason == .unreadableVersion)
		}
		#expect(store.storedValue(forKey: Defaults.Migration.versionKey) as? String == "three")
	}

	@Test func aStepCannotTouchTheVersionKey() {
		let steps = [Defaults.Migration(version: 1, .remove(Defaults.Migration.versionKey))]
		#expect(throws: Defaults.MigrationError.self) { try Defaults.migrate(steps, store: Defaults.InMemoryStore()) }
	}

	@Test func theVersionIsOnDiskAfterAMigrationOfAFileStore() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("settings.plist")
		let store = Defaults.FileStore.at(url)
		try store.write(try JSONEncoder().encode(window), forKey: "mainWindow")
		#expect(try Defaults.migrate(Self.steps, store: store) == 3)

		// What a new process would load: the file, flushed by the migration.
		let onDisk = try Defaults.Snapshot.read(from: url)
		#expect(onDisk[Defaults.Migration.versionKey] as? Int == 3)
		#expect(onDisk["window"] is String)
		#expect(onDisk["mainWindow"] == nil)
		let reloaded = try Defaults.InMemoryStore(values: onDisk)
		let runs = Atomic<Int>(0)
		let steps = Self.steps.map { step in
			Defaults.Migration(version: step.version) { _ in runs.add(1, ordering: .relaxed) }
		}
		#expect(try Defaults.migrate(steps, store: reloaded) == 3)
		#expect(runs.load(ordering: .relaxed) == 0)
	}
}
