import Foundation
import Synchronization

extension Defaults.Store {
	/// The value stored for `key`, ignoring registered defaults and launch arguments, which are never persisted and
	/// so must never be moved into the store.
	func persistedValue(forKey key: String) -> Any? {
		ownValue(forKey: key)
	}
}

enum MigrationRunner {
	static func run(
		_ migrations: [Defaults.Migration], in store: any Defaults.Store, versionKey: String
	)
		throws(Defaults.MigrationError) -> Int
	{
		try check(migrations, versionKey: versionKey)
		// `withLock` rethrows untyped errors only, so the typed outcome is carried out of the lock.
		// One run of a store at a time (the store's runtime holds the lock), so that two callers never interleave the
		// operations of one step.
		let runtime = StoreRuntime.of(store)
		let outcome: Result<Int, Defaults.MigrationError> = runtime.migrationRuns.withLock { _ in
			// A migration moves the user's values: its writes go beneath the administrator's locks (see
			// `StoreRuntime.migratingThread`).
			runtime.migratingThread.store(StoreRuntime.currentThread, ordering: .relaxed)
			defer { runtime.migratingThread.store(0, ordering: .relaxed) }
			// And what it reads is the user's own value, beneath a lock, an argument or a variable and never a system
			// or registered default, as what it writes goes there: a custom step that reads `storedValue(forKey:)` and writes back never copies a locked value into
			// the file. While it runs no key remembers a read (the count carries the flag under which nothing is
			// cached), so that no other thread is handed from a key's cache what only this thread may read.
			if let layered = store as? any LayeredStore {
				runtime.beginStandIn()
				layered.readOwnValuesOnly(onThread: StoreRuntime.currentThread)
			}
			defer {
				if let layered = store as? any LayeredStore {
					layered.readOwnValuesOnly(onThread: 0)
					runtime.endStandIn()
				}
			}
			do throws(Defaults.MigrationError) {
				return .success(try runLocked(migrations, in: store, versionKey: versionKey))
			} catch {
				return .failure(error)
			}
		}
		return try outcome.get()
	}

	private static func runLocked(
		_ migrations: [Defaults.Migration], in store: any Defaults.Store, versionKey: String
	)
		throws(Defaults.MigrationError) -> Int
	{
		var reached = try recordedVersion(in: store, versionKey: versionKey)
		for migration in migrations where migration.version > reached {
			for operation in migration.operations {
				do {
					try operation.apply(store)
				} catch {
					let step = migration.description.isEmpty ? "" : " (\(migration.description))"
					throw Defaults.MigrationError(
						reason: error.reason, version: migration.version, message: error.message + step,
						underlyingError: error.underlyingError)
				}
			}
			// The record comes after the step's writes, and stores persist writes in order, so a recorded version
			// always comes with its step's changes.
			store.commit(migration.version, forKey: versionKey, beneathLocks: true)
			reached = migration.version
			guard store.flush() else {
				throw Defaults.MigrationError(
					reason: .flushFailed, version: migration.version,
					message:
						"the store could not write its durable storage after the step; it runs again next time, with the same result",
					underlyingError: nil)
			}
		}
		return reached
	}

	static func recordedVersion(
		in store: any Defaults.Store, versionKey: String
	) throws(Defaults.MigrationError)
		-> Int
	{
		guard let stored = store.persistedValue(forKey: versionKey) else {
			return 0
		}
		guard let version = stored as? Int, version >= 0 else {
			throw Defaults.MigrationError(
				reason: .unreadableVersion, version: nil,
				message:
					"the key '\(versionKey)' holds \(Defaults.Snapshot.text(of: stored)), not a migration version; nothing was run or changed",
				underlyingError: nil)
		}
		return version
	}

	private static func check(_ migrations: [Defaults.Migration], versionKey: String) throws(Defaults.MigrationError) {
		func refuse(_ message: String) -> Defaults.MigrationError {
			Defaults.MigrationError(
				reason: .invalidSteps, version: nil, message: message + "; nothing was run", underlyingError: nil)
		}
		if let rule = KeyNameRules.violation(in: versionKey) {
			throw refuse("the version key '\(versionKey)' breaks a naming rule: \(rule)")
		}
		var previous = 0
		for migration in migrations {
			guard migration.version > previous else {
				throw refuse(
					migration.version < 1
						? "step \(migration.version) has a version below 1"
						: "step \(migration.version) comes after step \(previous); versions must be unique and ascending"
				)
			}
			previous = migration.version
			var vacated: [String: String] = [:]
			for operation in migration.operations {
				if operation.touchedKeys.contains(versionKey) {
					throw refuse("step \(migration.version) would \(operation.description), the version key")
				}
				if let key = operation.touchedKeys.first(where: { vacated[$0] != nil }) {
					throw refuse(
						"step \(migration.version) would \(operation.description) after it would \(vacated[key]!), so running it again after a crash could give another result; put them in separate steps"
					)
				}
				for key in operation.vacatedKeys {
					vacated[key] = operation.description
				}
			}
		}
	}

	static func write(
		_ value: Any?, forKey key: String, in store: any Defaults.Store, during description: String
	)
		throws(Defaults.MigrationError)
	{
		do {
			try store.write(value, forKey: key)
		} catch {
			throw Defaults.MigrationError(
				reason: .stepFailed, version: nil, message: "\(description): \(error)", underlyingError: error)
		}
	}

	static func handleUndecodable(
		_ error: Defaults.DecodingError, policy: Defaults.Migration.Operation.UndecodablePolicy,
		during description: String
	) throws(Defaults.MigrationError) {
		switch policy {
		case .keep:
			Defaults.report(
				Defaults.Failure(
					keyName: error.keyName, reason: .migration,
					message: "Migration could not \(description), so the value was left as it is. \(error.description)",
					decodingError: error))
		case .fail:
			throw Defaults.MigrationError(
				reason: .conflict, version: nil, message: "could not \(description): \(error.description)",
				underlyingError: error)
		}
	}

	static func report(keyName: String, _ message: String) {
		Defaults.report(Defaults.Failure(keyName: keyName, reason: .migration, message: "Migration: \(message)."))
	}
}
