import Foundation
import Synchronization

extension Defaults {
	/// One versioned step of a store's migration: key renames, form changes, removals, or code of your own.
	///
	/// Give ``Defaults/migrate(_:store:versionKey:)`` every step the app has ever had, in ascending versions; each
	/// store runs a step once, and records the version it reached in the store itself:
	///
	/// ```swift
	/// let reached = try Defaults.migrate([
	/// 	.init(version: 1, "Rename the window key", .rename(from: "mainWindow", to: "window")),
	/// 	.init(version: 2, "Window: JSON data to JSON text", .convert(.window)),
	/// 	.init(version: 3, "Drop the old cache", .remove("thumbnailCache")),
	/// 	.init(version: 4, "Split the name", .custom { store in
	/// 		guard let full = store.storedValue(forKey: "fullName") as? String else { return }
	/// 		try store.write(full.split(separator: " ").first.map(String.init), forKey: "firstName")
	/// 	}),
	/// ])
	/// ```
	///
	/// A step is recorded only after all its operations completed, and the store is flushed after each record, so a
	/// crash leaves every step either completed and recorded, or to be run again. Running a step again gives the same
	/// result, because every built-in operation is idempotent: it looks at what is stored and does only what is
	/// still left to do. Write custom steps the same way.
	public struct Migration: Sendable {
		/// The version the store is at once this step has completed; at least 1.
		package let version: Int
		/// What the step does, for errors and logs.
		package let description: String
		/// What the step does, in order.
		package let operations: [Operation]

		package init(version: Int, _ description: String, _ operations: [Operation]) {
			self.version = version
			self.description = description
			self.operations = operations
		}

		/// Creates a step that runs `operations` in order.
		///
		/// ```swift
		/// Defaults.Migration(version: 3, "Drop the old cache", .remove("thumbnailCache"))
		/// Defaults.Migration(
		/// 	version: 2, "Rename and convert the window",
		/// 	.rename(from: "mainWindow", to: "window"),
		/// 	.convert("window", from: [Defaults.AnyBridge<Window>.jsonData], to: .json))
		/// ```
		public init(version: Int, _ description: String, _ operations: Operation...) {
			self.init(version: version, description, operations)
		}

		/// Creates a step without a description (the package's tests; a user's step says what it does, for errors and
		/// logs).
		package init(version: Int, _ operations: Operation...) {
			self.init(version: version, "", operations)
		}

		/// Creates a step that runs `body` with the store being migrated: for the package's tests, the step
		/// `init(version:_:_:)` with the one operation `.custom(_:_:)` that users write.
		package init(
			version: Int, _ description: String = "", _ body: @escaping @Sendable (any Defaults.Store) throws -> Void
		) {
			self.init(version: version, description, [.custom(description.isEmpty ? "custom step" : description, body)])
		}

		/// The name the version a store reached is recorded under, unless ``Defaults/migrate(_:store:versionKey:)``
		/// is given another: the default of its `versionKey`, spelled out there (a program learns the version from
		/// `migrate`, which returns it).
		package static let versionKey = "DefaultsMigrationVersion"
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
		/// A sentence that says what went wrong and what was left as it was; ``description`` adds the step.
		package let message: String
		/// The error a custom step or a write threw.
		public let underlyingError: (any Error)?

		/// What went wrong and what was left as it was, with the step's version.
		public var description: String {
			guard let version else {
				return "Migration failed: \(message)"
			}
			return "Migration step \(version) failed: \(message)"
		}
	}

	/// Runs the steps of `migrations` that `store` has not run yet, in order, recording each version it reaches.
	///
	/// ```swift
	/// try Defaults.migrate([
	/// 	.init(version: 1, "Rename the window key", .rename(from: "mainWindow", to: "window")),
	/// 	.init(version: 2, "Window: JSON data to JSON text", .convert(.window)),
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
	///   - store: The store to migrate.
	///   - versionKey: Where the version is recorded. Give each independent set of steps sharing a store (say, a
	///     library's and the app's) its own.
	/// - Returns: The version the store is at: the last step's, or a higher one recorded by a newer app version.
	/// - Throws: ``MigrationError``.
	@discardableResult
	public static func migrate(
		_ migrations: [Migration], store: any Store = Defaults.standardStore,
		versionKey: String = "DefaultsMigrationVersion"
	) throws(MigrationError) -> Int {
		// In a test's isolated scope, the store standing in for `store`: a test runs the app's migrations there.
		try MigrationRunner.run(migrations, in: resolved(store), versionKey: versionKey)
	}

	/// The version `store` has reached, as recorded by ``migrate(_:store:versionKey:)``; 0 when none is. For the
	/// tests: a program learns it from `migrate`, which returns it.
	///
	/// - Throws: ``MigrationError`` with ``MigrationError/Reason/unreadableVersion`` when the key holds something else.
	package static func migrationVersion(
		of store: any Store = Defaults.standardStore, versionKey: String = Migration.versionKey
	) throws(MigrationError) -> Int {
		try MigrationRunner.recordedVersion(in: resolved(store), versionKey: versionKey)
	}
}
