import Foundation
import Synchronization

extension Defaults {
	/// One versioned step of a store's migration: key renames, form changes, removals, or code of your own.
	///
	/// Give ``Defaults/migrate(_:suite:versionKey:)`` every step the app has ever had, in ascending versions; each
	/// store runs a step once, and records the version it reached in the store itself:
	///
	/// ```swift
	/// let reached = try Defaults.migrate([
	/// 	.init(version: 1, "Rename the window key", .rename(from: "mainWindow", to: "window")),
	/// 	.init(version: 2, "Window: JSON data to JSON text", .convert(.window)),
	/// 	.init(version: 3, "Drop the old cache", .remove("thumbnailCache")),
	/// 	.init(version: 4, "Split the name") { store in
	/// 		guard let full = store.storedValue(forKey: "fullName") as? String else { return }
	/// 		try store.write(full.split(separator: " ").first.map(String.init), forKey: "firstName")
	/// 	},
	/// ])
	/// ```
	///
	/// A step is recorded only after all its operations completed, and the store is flushed after each record, so a
	/// crash leaves every step either completed and recorded, or to be run again. Running a step again gives the same
	/// result, because every built-in operation is idempotent: it looks at what is stored and does only what is
	/// still left to do. Write custom steps the same way.
	public struct Migration: Sendable {
		/// The version the store is at once this step has completed; at least 1.
		public let version: Int
		/// What the step does, for errors and logs.
		public let description: String
		/// What the step does, in order.
		public let operations: [Operation]

		/// Creates a step that runs `operations` in order.
		///
		/// ```swift
		/// Defaults.Migration(version: 2, "Rename and convert the window", [
		/// 	.rename(from: "mainWindow", to: "window"),
		/// 	.convert("window", from: Defaults.AnyBridge<Window>.jsonData, to: .json),
		/// ])
		/// ```
		public init(version: Int, _ description: String, _ operations: [Operation]) {
			self.version = version
			self.description = description
			self.operations = operations
		}

		/// Creates a step that runs `operations` in order.
		public init(version: Int, _ operations: [Operation]) {
			self.init(version: version, "", operations)
		}

		/// Creates a step that runs `operations` in order.
		///
		/// ```swift
		/// Defaults.Migration(version: 3, "Drop the old cache", .remove("thumbnailCache"))
		/// ```
		public init(version: Int, _ description: String, _ operations: Operation...) {
			self.init(version: version, description, operations)
		}

		/// Creates a step that runs `operations` in order.
		///
		/// ```swift
		/// Defaults.Migration(version: 3, .remove("thumbnailCache"))
		/// ```
		public init(version: Int, _ operations: Operation...) {
			self.init(version: version, "", operations)
		}

		/// Creates a step that runs `body` with the store being migrated.
		///
		/// `body` may run again after a crash, so write it to give the same result when it does: look at what is
		/// stored and do only what is left. Write through ``Defaults/Store/write(_:forKey:)`` and
		/// ``Defaults/Store/removeValue(forKey:)``, so that observers are told. Throwing stops the migration before
		/// this step is recorded.
		public init(
			version: Int, _ description: String = "", _ body: @escaping @Sendable (any Defaults.Store) throws -> Void
		) {
			self.init(version: version, description, [.custom(description.isEmpty ? "custom step" : description, body)])
		}

		/// The name the version a store reached is recorded under, unless ``Defaults/migrate(_:suite:versionKey:)``
		/// is given another.
		public static let versionKey = "DefaultsMigrationVersion"
	}

	/// A migration that cannot go on: what went wrong, and at which step. The store keeps every step completed
	/// before it, with its version recorded.
	public struct MigrationError: Error, CustomStringConvertible {
		/// What kind of problem stopped the migration.
		public enum Reason: Sendable {
			/// The steps are not in strictly ascending versions of at least 1; nothing ran.
			case invalidSteps
			/// The value under the version key is not a version this package wrote; nothing ran, nothing was
			/// changed.
			case unreadableVersion
			/// An operation found the store in a state it must not resolve on its own, such as a rename whose target
			/// holds another value, or a value that does not decode; it changed nothing.
			case conflict
			/// A custom step, or a write, threw ``underlyingError``.
			case stepFailed
			/// The store could not write its durable storage after a step was recorded.
			case flushFailed
		}

		/// What kind of problem stopped the migration.
		public let reason: Reason
		/// The version of the step that did not complete, if one was running.
		public let version: Int?
		/// A sentence that says what went wrong and what was left as it was.
		public let message: String
		/// The error a custom step or a write threw.
		public let underlyingError: (any Error)?

		/// The message, with the step's version.
		public var description: String {
			guard let version else {
				return "Migration failed: \(message)"
			}
			return "Migration step \(version) failed: \(message)"
		}
	}

	/// Runs the steps of `migrations` that `suite` has not run yet, in order, recording each version it reaches.
	///
	/// ```swift
	/// try Defaults.migrate([
	/// 	.init(version: 1, .rename(from: "mainWindow", to: "window")),
	/// 	.init(version: 2, .convert(.window)),
	/// ])
	/// ```
	///
	/// Steps whose version is at most the recorded one are skipped, so calling this at every launch costs one read.
	/// After each step the version is recorded under `versionKey` and the store is flushed. A step that throws stops
	/// the migration: the version stays at the last completed step, and the next call runs the failed step again.
	/// Migrations of one process run one at a time.
	///
	/// - Parameters:
	///   - migrations: Every step the app has, in strictly ascending versions of at least 1.
	///   - suite: The store to migrate.
	///   - versionKey: Where the version is recorded. Give each independent set of steps sharing a store (say, a
	///     library's and the app's) its own.
	/// - Returns: The version the store is at: the last step's, or a higher one recorded by a newer app version.
	/// - Throws: ``MigrationError``.
	@discardableResult
	public static func migrate(
		_ migrations: [Migration], suite: any Store = Defaults.standardStore,
		versionKey: String = Migration.versionKey
	) throws(MigrationError) -> Int {
		try MigrationRunner.run(migrations, in: suite, versionKey: versionKey)
	}

	/// The version `suite` has reached, as recorded by ``migrate(_:suite:versionKey:)``; 0 when none is.
	///
	/// - Throws: ``MigrationError`` with ``MigrationError/Reason/unreadableVersion`` when the key holds something else.
	public static func migrationVersion(
		of suite: any Store = Defaults.standardStore, versionKey: String = Migration.versionKey
	) throws(MigrationError) -> Int {
		try MigrationRunner.recordedVersion(in: suite, versionKey: versionKey)
	}
}

extension Defaults.Migration {
	/// One idempotent change to a store: running it again after it completed changes nothing.
	public struct Operation: Sendable {
		/// What the operation does, for errors and logs.
		public let description: String
		/// The keys it vacates (a rename's source, a removal), which a later operation of the same step must not
		/// use: that operation would fill the key again, and a re-run of the step would then see a different state.
		let vacatedKeys: [String]
		/// Every key it touches, where known.
		let touchedKeys: [String]
		let apply: @Sendable (any Defaults.Store) throws(Defaults.MigrationError) -> Void

		/// Moves the stored value of `source` to `target`, in its stored form, then removes `source`.
		///
		/// ```swift
		/// .rename(from: "mainWindow", to: "window")
		/// ```
		///
		/// Nothing stored under `source` means nothing to do (the rename ran before, or there was never a value).
		/// When both keys hold the same value, a previous run stopped between copying and removing, and only the
		/// removal is left. When `target` holds another value, `ifTargetExists` decides.
		public static func rename(
			from source: String, to target: String, ifTargetExists policy: TargetPolicy = .keepBoth
		) -> Self {
			let description = "rename '\(source)' to '\(target)'"
			return Self(description: description, vacatedKeys: [source], touchedKeys: [source, target]) {
				store throws(Defaults.MigrationError) in
				guard let value = store.persistedValue(forKey: source) else {
					return
				}
				if let existing = store.persistedValue(forKey: target),
					!Defaults.PropertyList.isEqual(existing, value)
				{
					switch policy {
					case .keepBoth:
						MigrationRunner.report(
							keyName: source,
							"\(description): '\(target)' already holds another value, so both keys were left as they are"
						)
						return
					case .keepTarget:
						store.removeValue(forKey: source)
						return
					case .replaceTarget:
						break
					case .fail:
						throw Defaults.MigrationError(
							reason: .conflict, version: nil,
							message:
								"\(description): '\(target)' already holds another value (\(Defaults.Snapshot.text(of: existing))); both keys were left as they are",
							underlyingError: nil)
					}
				}
				try MigrationRunner.write(value, forKey: target, in: store, during: description)
				store.removeValue(forKey: source)
			}
		}

		/// What a rename does when its target already holds a different value.
		public enum TargetPolicy: Sendable {
			/// Leave both keys as they are and report it to ``Defaults/failureHandler``: nothing is lost, the
			/// target's value is the one keys read.
			case keepBoth
			/// Keep the target's value and remove the source.
			case keepTarget
			/// Overwrite the target with the source's value, then remove the source.
			case replaceTarget
			/// Throw a ``Defaults/MigrationError`` and change nothing.
			case fail
		}

		/// What a conversion does with a stored value that neither the old nor the new form reads.
		public enum UndecodablePolicy: Sendable {
			/// Leave it as it is and report it to ``Defaults/failureHandler``; the key reads as its default, as it
			/// did before.
			case keep
			/// Throw a ``Defaults/MigrationError`` and change nothing.
			case fail
		}

		/// Removes the stored value of `name`.
		///
		/// ```swift
		/// .remove("thumbnailCache")
		/// ```
		public static func remove(_ name: String) -> Self {
			Self(description: "remove '\(name)'", vacatedKeys: [name], touchedKeys: [name]) { store in
				if store.persistedValue(forKey: name) != nil {
					store.removeValue(forKey: name)
				}
			}
		}

		/// Rewrites the value of `name` from any of the forms `old` to the form `new`.
		///
		/// ```swift
		/// .convert("window", from: [Defaults.AnyBridge<Window>.jsonData], to: .json)
		/// ```
		///
		/// A value `new` already reads is left as it is, so converting again changes nothing. A value no form reads
		/// is never removed or rewritten; `ifUndecodable` decides whether that stops the migration.
		public static func convert<Value>(
			_ name: String, from old: [Defaults.AnyBridge<Value>], to new: Defaults.AnyBridge<Value>,
			ifUndecodable policy: UndecodablePolicy = .keep
		) -> Self {
			let description = "convert '\(name)' to \(new.name)"
			return Self(description: description, vacatedKeys: [], touchedKeys: [name]) {
				store throws(Defaults.MigrationError) in
				guard let stored = store.persistedValue(forKey: name), new.value(fromStoredForm: stored) == nil else {
					return
				}
				guard let value = old.lazy.compactMap({ $0.value(fromStoredForm: stored) }).first else {
					let error = Defaults.DecodingError(
						keyName: name, storedValue: stored, bridgeName: new.name,
						reason: new.reasonForFailure(decoding: stored),
						alsoTried: old.map { ($0.name, $0.reasonForFailure(decoding: stored)) })
					try MigrationRunner.handleUndecodable(error, policy: policy, during: description)
					return
				}
				let converted: Any?
				do throws(Defaults.SerializationError) {
					converted = try new.storedForm(of: value)
				} catch {
					throw Defaults.MigrationError(
						reason: .stepFailed, version: nil, message: "\(description): \(error.description)",
						underlyingError: error)
				}
				try MigrationRunner.write(converted, forKey: name, in: store, during: description)
			}
		}

		/// Rewrites the value of `name` from the form `old` to the form `new`.
		///
		/// ```swift
		/// .convert("mime", from: Defaults.AnyBridge<Mime>.json, to: .rawValue)
		/// ```
		public static func convert<Value>(
			_ name: String, from old: Defaults.AnyBridge<Value>, to new: Defaults.AnyBridge<Value>,
			ifUndecodable policy: UndecodablePolicy = .keep
		) -> Self {
			convert(name, from: [old], to: new, ifUndecodable: policy)
		}

		/// Rewrites the value of `key` in its current form, if it is stored in one of the key's older forms
		/// (``Defaults/Key/alsoReading``).
		///
		/// ```swift
		/// extension Defaults.Keys {
		/// 	static let window = Key<Window>("window", default: .init(), bridge: .json, alsoReading: [.jsonData])
		/// }
		/// Defaults.Migration(version: 2, .convert(.window))
		/// ```
		///
		/// The store migrated is the one given to ``Defaults/migrate(_:suite:versionKey:)``, not the key's own.
		public static func convert<Value>(
			_ key: Defaults.Key<Value>, ifUndecodable policy: UndecodablePolicy = .keep
		)
			-> Self
		{
			convert(key.name, from: key.alsoReading, to: key.bridge, ifUndecodable: policy)
		}

		/// Runs `body` with the store being migrated.
		///
		/// `body` may run again after a crash: write it so that running it again gives the same result.
		public static func custom(
			_ description: String = "custom operation", _ body: @escaping @Sendable (any Defaults.Store) throws -> Void
		) -> Self {
			Self(description: description, vacatedKeys: [], touchedKeys: []) { store throws(Defaults.MigrationError) in
				do {
					try body(store)
				} catch let error as Defaults.MigrationError {
					throw error
				} catch {
					throw Defaults.MigrationError(
						reason: .stepFailed, version: nil, message: "\(description) threw: \(error)",
						underlyingError: error)
				}
			}
		}
	}
}

extension Defaults.Store {
	/// The value stored for `key`, ignoring registered defaults and launch arguments, which are never persisted and
	/// so must never be moved into the store.
	func persistedValue(forKey key: String) -> Any? {
		guard storedKeys().contains(key) else {
			return nil
		}
		return storedValue(forKey: key)
	}
}

enum MigrationRunner {
	// One migration at a time in a process, so that two callers never interleave the operations of one step.
	private static let lock = Mutex(())

	static func run(
		_ migrations: [Defaults.Migration], in store: any Defaults.Store, versionKey: String
	)
		throws(Defaults.MigrationError) -> Int
	{
		try check(migrations, versionKey: versionKey)
		// `Mutex.withLock` cannot rethrow a typed error, so the outcome is carried out of the lock.
		let outcome: Result<Int, Defaults.MigrationError> = lock.withLock { _ in
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
			store.commit(migration.version, forKey: versionKey)
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
