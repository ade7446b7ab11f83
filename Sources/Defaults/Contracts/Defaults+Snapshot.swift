import Foundation

extension Defaults {
	/// Pins a store's stored forms in a property-list file, so that a test fails when one of them changes.
	///
	/// The package pins the stored form of every built-in bridge in its own `Fixtures/`; a snapshot does the same for
	/// an app's settings. Write sample values to a store, write its snapshot once, review and commit the file, and
	/// check the store against it in every test run. A failing check means the stored form of a setting changed,
	/// and data the app stored before would no longer read the same way: pin the key's bridge (``Defaults/AnyBridge``)
	/// or add a migration (``Defaults/migrate(_:store:versionKey:)``), rather than update the snapshot.
	///
	/// ```swift
	/// import Defaults
	/// import Foundation
	/// import Testing
	///
	/// extension Defaults.Keys {
	/// 	static let window = Key<Window>("window", default: Window(width: 800, height: 600, title: ""))
	/// 	static let mime = Key<Mime>("mime", default: .text)
	/// 	static let recent = Key<[String]>("recent", default: [])
	/// }
	///
	/// @Test func settingsKeepTheirStoredForms() throws {
	/// 	let store = Defaults.InMemoryStore()
	/// 	store[.window] = Window(width: 640, height: 480, title: "Main")
	/// 	store[.mime] = .json
	/// 	store[.recent] = ["a.txt", "b.txt"]
	/// 	let keys: [Defaults.Keys] = [.window, .mime, .recent]
	///
	/// 	// Outside the test target's sources (or excluded from it), so that SwiftPM does not warn about the file.
	/// 	let snapshot = URL(filePath: #filePath)
	/// 		.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
	/// 		.appending(path: "Snapshots/Settings.plist")
	/// 	if ProcessInfo.processInfo.environment["RECORD_SNAPSHOTS"] == "1" {
	/// 		try Defaults.Snapshot.write(of: store, keys: keys, to: snapshot)
	/// 	}
	/// 	try Defaults.Snapshot.verify(store, against: snapshot, keys: keys)
	/// }
	/// ```
	///
	/// This is the test `settingsKeepTheirStoredForms` in the package's `Tests/DefaultsTests/Contracts`, whose
	/// snapshot is `Fixtures/Snapshots/Settings.plist`.
	///
	/// The file is an XML property list with sorted keys, readable in review. It holds stored values only, never
	/// registered defaults or launch arguments. Stored forms compare as property-list values, with two exceptions
	/// that keep the comparison about meaning rather than bytes: keyed archives compare by their contents, and dates
	/// compare to the second, which is what XML property lists keep.
	public enum Snapshot {
		/// A key whose stored form differs from its snapshot (the `defaults verify` command lists them).
		package struct Difference: CustomStringConvertible, @unchecked Sendable {
			/// How the store differs from the snapshot.
			package enum Kind: Sendable, Equatable {
				/// The snapshot has a value for the key and the store has none.
				case missing
				/// The store has a value for the key and the snapshot has none.
				case unexpected
				/// Both have a value, and the stored form differs.
				case changed
			}

			/// The key's name.
			package let key: String
			/// How the store differs from the snapshot.
			package let kind: Kind
			/// The snapshot's form, as a normalised property-list value; `nil` for ``Kind/unexpected``.
			package let snapshotForm: Any?
			/// The store's form, as a normalised property-list value; `nil` for ``Kind/missing``.
			package let storedForm: Any?

			/// The key and both forms, in a sentence.
			package var description: String {
				switch kind {
				case .missing:
					"'\(key)' is missing: the snapshot has \(Snapshot.text(of: snapshotForm!)), the store has nothing"
				case .unexpected:
					"'\(key)' is not in the snapshot: the store has \(Snapshot.text(of: storedForm!))"
				case .changed:
					"'\(key)' changed: the snapshot has \(Snapshot.text(of: snapshotForm!)), the store has \(Snapshot.text(of: storedForm!))"
				}
			}
		}

		/// A snapshot file that cannot be read or written, or a store that does not match its snapshot: the
		/// description names the file and says which, listing every key that differs.
		public struct Error: Swift.Error, CustomStringConvertible, @unchecked Sendable {
			/// The snapshot file (the caller named it; the ``description`` names it).
			package let url: URL
			/// What is wrong with the file (`could not be read …`); `nil` when the store does not match it.
			package let fileProblem: String?
			/// Every key that differs, sorted by name; empty for a problem with the file.
			package let differences: [Difference]

			/// A problem with the file itself.
			init(url: URL, reason: String) {
				self.url = url
				self.fileProblem = reason
				self.differences = []
			}

			/// A store that does not match the file.
			init(url: URL, differences: [Difference]) {
				self.url = url
				self.fileProblem = nil
				self.differences = differences
			}

			/// The file and what is wrong: the problem with the file, or every difference, one a line.
			public var description: String {
				if let fileProblem {
					return "The snapshot \(url.path(percentEncoded: false)) \(fileProblem)"
				}
				return "The store does not match the snapshot \(url.path(percentEncoded: false)):\n"
					+ differences.map { "- \($0)" }.joined(separator: "\n")
			}
		}

		/// The stored forms of the keys named `names` in `store` (every stored key when `nil`), without registered
		/// defaults.
		package static func storedForms(in store: any Defaults.Store, names: [String]? = nil) -> [String: Any] {
			let stored = Set(store.storedKeys())
			let names = names.map { stored.intersection($0) } ?? stored
			var forms: [String: Any] = [:]
			for name in names {
				forms[name] = store.ownValue(forKey: name)
			}
			return forms
		}

		/// The entry of a snapshot of some keys that names them, so that checking it without naming keys checks those
		/// and no others. A dot keeps it apart from every key name Defaults accepts.
		package static let recordedNamesEntry = "Defaults.Snapshot.keys"

		/// A snapshot that names a key as the entry of recorded names: the two cannot share the file.
		struct ReservedName: Swift.Error, CustomStringConvertible {
			var description: String {
				"'\(recordedNamesEntry)' names the keys of a snapshot; it cannot be a key in one"
			}
		}

		/// The snapshot of the keys named `names` in `store` (every stored key when `nil`), as an XML property list
		/// with sorted keys: what ``write(of:keys:to:)`` writes, for a tool that prints it. A snapshot of named keys
		/// records their names (``recordedNamesEntry``), also those not stored.
		package static func data(of store: any Defaults.Store, names: [String]? = nil) throws -> Data {
			var forms = storedForms(in: store, names: names)
			if let names {
				guard !names.contains(recordedNamesEntry) else {
					throw ReservedName()
				}
				forms[recordedNamesEntry] = Array(Set(names)).sorted()
			}
			return try PropertyListSerialization.data(fromPropertyList: forms, format: .xml, options: 0)
		}

		/// Writes the snapshot of `keys` in `store` (every stored key when `nil`) to `url`, replacing the file. A
		/// snapshot of some keys records their names, which ``verify(_:against:keys:)`` checks when given no keys.
		///
		/// ```swift
		/// try Defaults.Snapshot.write(of: store, keys: [.window, .mime], to: snapshotURL)
		/// ```
		public static func write(
			of store: any Defaults.Store, keys: [Defaults.Keys]? = nil, to url: URL
		) throws(Error) {
			try write(of: Defaults.resolved(store), names: keys?.map(\.name), to: url)
		}

		/// Writes the snapshot of the keys named `names` in `store` (every stored key when `nil`) to `url`.
		package static func write(of store: any Defaults.Store, names: [String]?, to url: URL) throws(Error) {
			let data: Data
			do {
				data = try self.data(of: store, names: names)
			} catch {
				throw Error(url: url, reason: "could not be encoded as a property list: \(error)")
			}
			do {
				try FileManager.default.createDirectory(
					at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
				try data.write(to: url, options: .atomic)
			} catch {
				throw Error(url: url, reason: "could not be written: \(error.localizedDescription)")
			}
		}

		/// The stored forms in the snapshot file at `url`, normalised, without the names it records.
		package static func read(from url: URL) throws(Error) -> [String: Any] {
			try readRecordingNames(from: url).forms
		}

		/// The stored forms in the snapshot file at `url`, normalised, and the names of the keys it was written for
		/// (`nil` for a snapshot of every stored key).
		package static func readRecordingNames(
			from url: URL
		) throws(Error) -> (forms: [String: Any], names: [String]?) {
			let data: Data
			do {
				data = try Data(contentsOf: url)
			} catch {
				throw Error(
					url: url,
					reason:
						"could not be read (\(error.localizedDescription)); write it with Defaults.Snapshot.write(of:keys:to:), review it and commit it"
				)
			}
			let plist: Any
			do {
				plist = try PropertyListSerialization.propertyList(from: data, format: nil)
			} catch {
				throw Error(url: url, reason: "is not a property list: \(error)")
			}
			do throws(Defaults.PropertyList.Error) {
				guard var dictionary = try Defaults.PropertyList.normalize(plist) as? [String: Any] else {
					throw Defaults.PropertyList.Error(path: "", reason: "the top level is not a dictionary")
				}
				guard let recorded = dictionary.removeValue(forKey: recordedNamesEntry) else {
					return (dictionary, nil)
				}
				guard let names = recorded as? [String] else {
					throw Defaults.PropertyList.Error(
						path: recordedNamesEntry, reason: "the names of the snapshot's keys are not a list of strings")
				}
				return (dictionary, names)
			} catch {
				throw Error(url: url, reason: "is not a snapshot: \(error.description)")
			}
		}

		/// The differences between the stored forms `stored` and the snapshot `snapshot`, sorted by key; only the keys
		/// named `names` when given.
		package static func differences(
			between stored: [String: Any], and snapshot: [String: Any], names: [String]? = nil
		) -> [Difference] {
			let names = names.map(Set.init) ?? Set(stored.keys).union(snapshot.keys)
			return names.sorted().compactMap { name in
				switch (snapshot[name], stored[name]) {
				case (nil, nil):
					return nil
				case (let expected?, nil):
					return Difference(key: name, kind: .missing, snapshotForm: expected, storedForm: nil)
				case (nil, let actual?):
					return Difference(key: name, kind: .unexpected, snapshotForm: nil, storedForm: actual)
				case (let expected?, let actual?):
					return isSameStoredForm(actual, expected)
						? nil : Difference(key: name, kind: .changed, snapshotForm: expected, storedForm: actual)
				}
			}
		}

		/// The keys of `store` whose stored forms differ from the snapshot at `url`; only the keys named `names` when
		/// given, else those the snapshot was written for, else every key in either.
		///
		/// A key absent from both is no difference, so a snapshot can pin that a key is not stored.
		package static func differences(
			in store: any Defaults.Store, against url: URL, names: [String]? = nil
		) throws(Error) -> [Difference] {
			let snapshot = try readRecordingNames(from: url)
			let names = names ?? snapshot.names
			return differences(between: storedForms(in: store, names: names), and: snapshot.forms, names: names)
		}

		/// Checks `store` against the snapshot at `url`, throwing an ``Error`` that lists every difference.
		///
		/// ```swift
		/// try Defaults.Snapshot.verify(store, against: snapshotURL)
		/// ```
		///
		/// - Parameters:
		///   - store: The store to check.
		///   - url: The snapshot file, an XML property list written by ``write(of:keys:to:)``.
		///   - keys: The keys to check, such as `[.window, .mime]`; when `nil`, the keys the snapshot was written for
		///     (``write(of:keys:to:)`` records them), or every key in the store or the snapshot.
		/// - Throws: ``Error``, listing every difference, or saying why the file cannot be read.
		public static func verify(
			_ store: any Defaults.Store, against url: URL, keys: [Defaults.Keys]? = nil
		) throws(Error) {
			try verify(Defaults.resolved(store), against: url, names: keys?.map(\.name))
		}

		/// Checks the stored forms of the keys named `names` (every key when `nil`) against the snapshot at `url`.
		package static func verify(_ store: any Defaults.Store, against url: URL, names: [String]?) throws(Error) {
			let differences = try differences(in: store, against: url, names: names)
			guard differences.isEmpty else {
				throw Error(url: url, differences: differences)
			}
		}

		/// Whether two normalised stored forms are the same: equal property-list values, keyed archives with the same
		/// contents, or dates within the same second when one of them is whole (as XML property lists keep dates).
		package static func isSameStoredForm(_ lhs: Any, _ rhs: Any) -> Bool {
			switch (lhs, rhs) {
			case let (lhs as Date, rhs as Date):
				return lhs == rhs || isSameSecond(lhs, rhs) || isSameSecond(rhs, lhs)
			case let (lhs as Data, rhs as Data):
				return lhs == rhs || isSameArchive(lhs, rhs)
			case let (lhs as [Any], rhs as [Any]):
				return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { isSameStoredForm($0, $1) }
			case let (lhs as [String: Any], rhs as [String: Any]):
				return lhs.count == rhs.count
					&& lhs.allSatisfy { key, value in rhs[key].map { isSameStoredForm(value, $0) } ?? false }
			default:
				return Defaults.PropertyList.isEqual(lhs, rhs)
			}
		}

		/// Whether `precise` falls within the whole second `whole`, to which an XML property list truncates it.
		private static func isSameSecond(_ precise: Date, _ whole: Date) -> Bool {
			let seconds = whole.timeIntervalSinceReferenceDate
			guard seconds.rounded(.towardZero) == seconds else {
				return false
			}
			return precise.timeIntervalSinceReferenceDate.rounded(.towardZero) == seconds
		}

		/// Whether two data values are keyed archives (or other property lists) with the same contents: archives of
		/// equal objects can differ in their bytes, such as the order of their objects' table.
		private static func isSameArchive(_ lhs: Data, _ rhs: Data) -> Bool {
			guard
				let lhsList = try? PropertyListSerialization.propertyList(from: lhs, format: nil),
				let rhsList = try? PropertyListSerialization.propertyList(from: rhs, format: nil),
				let lhsNormalized = try? Defaults.PropertyList.normalize(lhsList),
				let rhsNormalized = try? Defaults.PropertyList.normalize(rhsList)
			else {
				return false
			}
			return isSameStoredForm(lhsNormalized, rhsNormalized)
		}

		/// A stored form in a short, readable text that shows its property-list type: `string "dark"`,
		/// `integer 3`, `keyed archive of Bookmark (312 bytes)`.
		static func text(of value: Any) -> String {
			Defaults.PropertyList.Printer(.typed) { data in
				KeyedArchive.rootClassName(of: data).map { "keyed archive of \($0) (\(data.count) bytes)" }
			}.text(of: value)
		}
	}
}
