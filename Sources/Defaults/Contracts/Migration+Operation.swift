import Foundation
import Synchronization

extension Defaults.Migration {
	/// One idempotent change to a store: running it again after it completed changes nothing.
	public struct Operation: Sendable {
		/// What the operation does, for errors and logs.
		package let description: String
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
				guard let stored = store.persistedValue(forKey: name) else {
					return
				}
				let value: Value
				switch new.decode(stored, orOlderForms: old, keyName: name) {
				case .absent, .current:
					return
				case .olderForm(let older, _):
					value = older
				case .undecodable(let error):
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
		package static func convert<Value>(
			_ name: String, from old: Defaults.AnyBridge<Value>, to new: Defaults.AnyBridge<Value>,
			ifUndecodable policy: UndecodablePolicy = .keep
		) -> Self {
			convert(name, from: [old], to: new, ifUndecodable: policy)
		}

		/// Rewrites the value of `key` in its current form, if it is stored in one of the key's older forms
		/// (the `alsoReading:` of its initializer).
		///
		/// ```swift
		/// extension Defaults.Keys {
		/// 	static let window = Key<Window>("window", default: .init(), bridge: .json, alsoReading: [.jsonData])
		/// }
		/// Defaults.Migration(version: 2, "Window: JSON data to JSON text", .convert(.window))
		/// ```
		///
		/// The store migrated is the one given to ``Defaults/migrate(_:store:versionKey:)``, not the key's own.
		public static func convert<Value>(
			_ key: Defaults.Key<Value>, ifUndecodable policy: UndecodablePolicy = .keep
		)
			-> Self
		{
			convert(key.name, from: key.alsoReading, to: key.bridge, ifUndecodable: policy)
		}

		/// Runs `body` with the store being migrated: a step of your own code.
		///
		/// ```swift
		/// Defaults.Migration(version: 4, "Split the name", .custom { store in
		/// 	guard let full = store.storedValue(forKey: "fullName") as? String else { return }
		/// 	try store.write(full.split(separator: " ").first.map(String.init), forKey: "firstName")
		/// })
		/// ```
		///
		/// `body` may run again after a crash, so write it to give the same result when it does: look at what is
		/// stored and do only what is left. Write through ``Defaults/Store/write(_:forKey:)`` and
		/// ``Defaults/Store/removeValue(forKey:)``, so that observers are told. Throwing stops the migration before
		/// the step is recorded.
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
