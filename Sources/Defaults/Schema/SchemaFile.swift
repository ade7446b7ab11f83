import Foundation

/// The schema file an app writes beside its settings file (`<name>.schema.plist`), and the one reader of it, which
/// the `defaults` command uses: the format is defined here once.
///
/// A property list, like the settings file it describes: a key's default is kept in its stored form, dates and data
/// included, which JSON could hold only in a form of its own; and the settings file's readers read it.
///
/// ```
/// { format = "Defaults schema"; version = 2;
///   keys = { homepage = { type = URL; bridge = "TopLevelCodableBridge<URL>"; input = url;
///                         default = "\"https:\/\/example.com\""; shape = { kind = json; content = { kind = string; }; };
///                         synced = 0; locked = 0; }; }; }
/// ```
///
/// Version 2 added `shape` (``StoredShape``) and `elements` (the ``Input`` of a collection's elements); a version 1
/// file reads as one without them, so a value it describes is checked by the kind of its default only.
package struct SchemaFile: Sendable {
	/// One key's description.
	package struct Entry: Sendable, Equatable {
		package var name: String
		/// The value type, as Swift spells it (`URL`, `Optional<String>`, `Array<Money>`).
		package var type: String
		/// The name of the bridge the key writes with.
		package var bridge: String
		/// How a value typed on a command line becomes what the key reads, when the key is of a type whose text the
		/// command can convert (``Input``); `nil` otherwise.
		package var input: Input?
		/// How a command line's text becomes each element of an array or set key, or each value of a dictionary key,
		/// when the elements are of a type whose text converts; `nil` otherwise.
		package var elementInput: Input?
		/// The structure of the key's stored form, as its default or a sample the catalog gave shows it; `nil` when
		/// nothing showed it (an optional key without a sample, a computed default, a version 1 schema).
		package var shape: StoredShape?
		/// The stored form of the key's static default; `nil` for an optional key's `nil` or a computed default.
		package var storedDefault: PropertyListValue?
		/// Whether the key's default is computed at each read.
		package var hasDynamicDefault: Bool
		package var isSynced: Bool
		package var isLocked: Bool

		package init(
			name: String, type: String, bridge: String, input: Input?, elementInput: Input? = nil,
			shape: StoredShape? = nil, storedDefault: Any?, hasDynamicDefault: Bool, isSynced: Bool, isLocked: Bool
		) {
			self.name = name
			self.type = type
			self.bridge = bridge
			self.input = input
			self.elementInput = elementInput
			self.shape = shape
			self.storedDefault = storedDefault.map(PropertyListValue.init)
			self.hasDynamicDefault = hasDynamicDefault
			self.isSynced = isSynced
			self.isLocked = isLocked
		}
	}

	/// The text forms a command line can give for a key, and the stored form each becomes.
	package enum Input: String, Sendable, CaseIterable {
		case string, integer, real, boolean, date, data
		/// A URL, stored as the JSON text of its `Codable` form (``Defaults/URLBridge``).
		case url
		/// A UUID, stored as its upper-case `uuidString`.
		case uuid
	}

	/// A stored form, compared as snapshots compare them.
	package struct PropertyListValue: @unchecked Sendable, Equatable {
		package let value: Any

		init(_ value: Any) {
			self.value = value
		}

		package static func == (lhs: Self, rhs: Self) -> Bool {
			Defaults.Snapshot.isSameStoredForm(lhs.value, rhs.value)
		}
	}

	/// Why a schema file cannot be read.
	package struct ReadError: Error, CustomStringConvertible {
		/// What kept the schema from being read: a reader that looks for a schema tells a missing file from a broken one,
		/// and an input it could not read from one that is not a schema.
		package enum Kind: Sendable {
			/// No file at the path.
			case missing
			/// A file that could not be opened or read (permissions, not a regular file, a link root must not follow).
			case inaccessible
			/// A file that was read and is not a schema this reads.
			case malformed
		}

		package let url: URL
		package let kind: Kind
		package let reason: String
		package var description: String { "The schema \(url.path(percentEncoded: false)) \(reason)" }

		init(url: URL, kind: Kind = .malformed, reason: String) {
			self.url = url
			self.kind = kind
			self.reason = reason
		}
	}

	static let formatName = "Defaults schema"
	/// The version written; ``readableVersions`` are read.
	static let version = 2
	static let readableVersions = 1...2

	/// The entries, by name.
	package var entries: [Entry]

	package init(entries: [Entry]) {
		self.entries = entries.sorted { $0.name < $1.name }
	}

	/// The schema file of the settings file at `settingsFile`: `<name>.schema.plist` beside `<name>.plist`.
	package static func url(besideSettingsFile settingsFile: URL) -> URL {
		let base = settingsFile.pathExtension == "plist" ? settingsFile.deletingPathExtension() : settingsFile
		return base.deletingLastPathComponent().appending(path: base.lastPathComponent + ".schema.plist")
	}

	/// The file's bytes: an XML property list with sorted keys, readable in review.
	package func data() throws -> Data {
		var keys: [String: Any] = [:]
		for entry in entries {
			var fields: [String: Any] = [
				"type": entry.type, "bridge": entry.bridge, "synced": entry.isSynced, "locked": entry.isLocked,
			]
			fields["input"] = entry.input?.rawValue
			fields["elements"] = entry.elementInput?.rawValue
			fields["shape"] = entry.shape?.propertyList
			fields["default"] = entry.storedDefault?.value
			if entry.hasDynamicDefault {
				fields["dynamicDefault"] = true
			}
			keys[entry.name] = fields
		}
		let file: [String: Any] = ["format": Self.formatName, "version": Self.version, "keys": keys]
		return try PropertyListSerialization.data(fromPropertyList: file, format: .xml, options: 0)
	}

	/// Reads the schema at `url`; a file that is not one is an error that says why, never a partial schema.
	///
	/// Read as a settings file is read (`SettingsFile.read()`): bounded, only a regular file, and, run as root, under
	/// the rules for a file other users could steer, since the `defaults` command reads a schema in a user's folder.
	package init(contentsOf url: URL) throws(ReadError) {
		let top: [String: Any]
		switch SettingsFile(url: url).read() {
		case .missing:
			throw ReadError(url: url, kind: .missing, reason: "does not exist")
		case .inaccessible(let reason):
			throw ReadError(url: url, kind: .inaccessible, reason: "could not be read: \(reason)")
		case .unreadable(_, _, let reason):
			throw ReadError(url: url, reason: "is not a property list with a dictionary at the top: \(reason)")
		case .values(let values, _):
			top = values
		}
		guard top["format"] as? String == Self.formatName else {
			throw ReadError(url: url, reason: "is not a Defaults schema (no format = \"\(Self.formatName)\")")
		}
		guard let version = top["version"] as? Int, Self.readableVersions.contains(version) else {
			throw ReadError(
				url: url,
				reason:
					"has version \(top["version"].map { "\($0)" } ?? "none"), and this reads versions "
					+ "\(Self.readableVersions.lowerBound) to \(Self.readableVersions.upperBound)")
		}
		guard let keys = top["keys"] as? [String: Any] else {
			throw ReadError(url: url, reason: "has no dictionary of keys")
		}
		var entries: [Entry] = []
		for (name, value) in keys {
			guard let fields = value as? [String: Any], let type = fields["type"] as? String,
				let bridge = fields["bridge"] as? String
			else {
				throw ReadError(url: url, reason: "describes the key '\(name)' without a type and a bridge")
			}
			var inputs: [String: Input] = [:]
			for field in ["input", "elements"] {
				if let text = fields[field] {
					guard let known = (text as? String).flatMap(Input.init(rawValue:)) else {
						throw ReadError(
							url: url, reason: "gives the key '\(name)' an input this does not know: \(text)")
					}
					inputs[field] = known
				}
			}
			entries.append(
				Entry(
					name: name, type: type, bridge: bridge, input: inputs["input"], elementInput: inputs["elements"],
					shape: StoredShape(propertyList: fields["shape"]), storedDefault: fields["default"],
					hasDynamicDefault: fields["dynamicDefault"] as? Bool ?? false,
					isSynced: fields["synced"] as? Bool ?? false, isLocked: fields["locked"] as? Bool ?? false))
		}
		self.init(entries: entries)
	}

	/// The entry of the key `name`, if the schema describes it.
	package func entry(named name: String) -> Entry? {
		entries.first { $0.name == name }
	}
}
