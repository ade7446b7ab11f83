import Defaults
import Foundation

// The schema an app writes beside its settings file (`Defaults.Catalog.writeSchema()`), or the one `-schema` names:
// `keys` lists what it describes, and `write` (and `-system write` and `lock`) converts a bare value to what the key
// reads, or refuses it with the flag to use.

extension OptionSpec {
	/// `-schema <path>`: the app's schema is that file, not the one beside the settings file.
	static let schema = OptionSpec(
		name: "-schema", valueName: "path",
		help: "the app's schema is the file at <path>, not <name>.schema.plist beside the settings file")
}

extension Verb.Declaration {
	static let keys = Verb.Declaration(
		synopsis: "<domain>",
		summary: "list the app's keys from its schema",
		details: """
			Prints each key the app's schema describes (<name>.schema.plist beside the settings file, which
			Defaults.Catalog.writeSchema() writes, or the file -schema names): its type, the bridge it is stored
			through, the stored form of its default, whether it is synced or locked, and, for a stored value that
			does not decode as the app reads it as far as the schema tells (its kind, and the structure of its
			stored form, such as a Codable value's JSON fields), why. With --json, an object by key name.
			While a schema is there, write converts a bare value to the key's type (a URL key takes
			https://example.com as the app's Key<URL> stores it) or refuses it, naming the flag to use; a type
			flag writes exactly what it says.
			Exits 1 when the domain has no schema, 66 when the schema -schema names cannot be read, 65 when a
			schema is not one.
			""",
		options: [.schema]
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		try arguments.finish()
		guard let schema = try arguments.schema(besideSettingsFile: domain.url) else {
			throw .notFound(
				"The domain \(domain.name) has no schema: the app writes one beside its settings file with "
					+ "Defaults.Catalog.writeSchema(), or name one with -schema <path>.")
		}
		let stored = try domain.values(mustExist: false)
		if arguments.isJSON {
			var all: [String: Any] = [:]
			for entry in schema.entries {
				var fields: [String: Any] = [
					"type": entry.type, "bridge": entry.bridge, "synced": entry.isSynced, "locked": entry.isLocked,
				]
				fields["default"] = entry.storedDefault?.value
				fields["doesNotDecode"] = stored[entry.name].flatMap { whyNotDecoding($0, for: entry) }
				all[entry.name] = fields
			}
			Output.line(JSONFormat.encode(all))
			return .success
		}
		for entry in schema.entries {
			var line = "\(entry.name): \(entry.type) through \(entry.bridge)"
			if let value = entry.storedDefault?.value {
				// A URL's default as the app reads it, not as the JSON text it is stored as.
				let url = entry.input == .url ? try? StoredText.url(value, key: entry.name) : nil
				line += ", default \(url ?? TextFormat.compact(value))"
			} else if entry.hasDynamicDefault {
				line += ", default computed by the app"
			}
			if entry.isSynced {
				line += ", synced"
			}
			if entry.isLocked {
				line += ", locked"
			}
			if let why = stored[entry.name].flatMap({ whyNotDecoding($0, for: entry) }) {
				line += "; the stored value does not decode: \(why)"
			}
			Output.line(line)
		}
		return .success
	}
}

/// Why the stored `value` does not decode as the key of `entry` reads it, as far as the schema tells: the kind of value
/// its input takes, then the structure of its stored form (``StoredShape``), else the kind of its default; `nil` when
/// it may decode. The app's bridge alone decides the rest.
func whyNotDecoding(_ value: Any, for entry: SchemaFile.Entry) -> String? {
	if let why = misfit(value, for: entry) {
		return why
	}
	if let shape = entry.shape {
		return shape.problem(with: value)
	}
	guard entry.input == nil, let storedDefault = entry.storedDefault?.value else {
		return nil
	}
	let kind = withArticle(Defaults.PropertyList.typeName(of: value))
	let expected = withArticle(Defaults.PropertyList.typeName(of: storedDefault))
	return expected == kind ? nil : "\(kind), where the default is \(expected)"
}

/// Why the stored `value` is not of the kind the input of `entry` converts to; `nil` when it is, or the key has no
/// input.
private func misfit(_ value: Any, for entry: SchemaFile.Entry) -> String? {
	let kind = withArticle(Defaults.PropertyList.typeName(of: value))
	switch entry.input {
	case .string: return value is String ? nil : "\(kind), not text"
	case .integer: return value is any BinaryInteger ? nil : "\(kind), not an integer"
	case .real: return value is any BinaryFloatingPoint || value is any BinaryInteger ? nil : "\(kind), not a number"
	case .boolean: return value is Bool || value is any BinaryInteger ? nil : "\(kind), not a boolean"
	case .date: return value is Date ? nil : "\(kind), not a date"
	case .data: return value is Data ? nil : "\(kind), not data"
	case .uuid: return (value as? String).flatMap(UUID.init(uuidString:)) != nil ? nil : "not a UUID"
	case .url:
		do {
			_ = try StoredText.url(value, key: entry.name)
			return nil
		} catch {
			return "not the JSON text of a URL, which a Key<URL> reads"
		}
	case nil:
		return nil
	}
}

/// `kind` (a property-list type name) with its article: "an integer", "a string".
private func withArticle(_ kind: String) -> String {
	("aeiou".contains(kind.first ?? "x") ? "an " : "a ") + kind
}

extension VerbArguments {
	/// The app's schema for the domain whose settings file is `settingsFile`: the file `-schema` names, which must
	/// read, else the one beside the settings file, or `nil` when there is none. A file that is not a schema is an
	/// error, never silently ignored.
	func schema(besideSettingsFile settingsFile: URL) throws(ToolError) -> SchemaFile? {
		guard let path = options[OptionSpec.schema.name] else {
			return try Self.readSchema(at: SchemaFile.url(besideSettingsFile: settingsFile), isNamed: false)
		}
		guard !path.isEmpty else {
			throw .usage("-schema needs the path of a schema file.", verb: verb)
		}
		return try Self.readSchema(at: URL(filePath: path, directoryHint: .notDirectory).absoluteURL, isNamed: true)
	}

	/// The schema at `url`; `nil` when there is no file and none was named. A schema that was named and is not there,
	/// or any that cannot be read, is an input that cannot be read (66), as `verify`'s snapshot is.
	private static func readSchema(at url: URL, isNamed: Bool) throws(ToolError) -> SchemaFile? {
		do {
			return try SchemaFile(contentsOf: url)
		} catch {
			switch error.kind {
			case .missing where !isNamed:
				return nil
			case .missing, .inaccessible:
				throw ToolError("\(error.description); nothing was changed.", status: .noInput)
			case .malformed:
				let remedy =
					isNamed
					? "name the schema the app wrote with Defaults.Catalog.writeSchema(to:)"
					: "remove it or let the app write it again"
				throw .badValue("\(error.description); \(remedy). Nothing was changed.")
			}
		}
	}
}

extension WriteRequest {
	/// The value part of `write`, as ``init(tokens:)`` reads it, except a bare value for a key that `entry` (the
	/// schema's) describes: converted to what the key reads, or refused with the flag that would write it.
	init(tokens: [String], key: String, entry: SchemaFile.Entry?) throws(ToolError) {
		guard let entry, tokens.count == 1, let text = tokens.first, !text.hasPrefix("-") || text == "-" else {
			try self.init(tokens: tokens)
			return
		}
		let what = "The key \(key) is a \(entry.type) (its app's schema says so)"
		if let input = entry.input {
			self = .set(try Self.converted(text, input: input, what: what))
			return
		}
		let isPropertyListText = text.first(where: { !$0.isWhitespace }).map { "({<".contains($0) } ?? false
		if !isPropertyListText {
			if entry.bridge == "JSON text" || entry.bridge.hasPrefix("TopLevelCodableBridge") {
				throw .badValue("\(what), stored as JSON text: write its JSON with -json; nothing was written.")
			}
			if let stored = entry.storedDefault?.value, !(stored is String) {
				let flag = Self.flag(forStoredForm: stored)
				throw .badValue(
					"\(what), stored as a \(Defaults.PropertyList.typeName(of: stored)): write it with \(flag); "
						+ "nothing was written.")
			}
		}
		try self.init(tokens: tokens)
	}

	/// `text` as the stored form of a key whose schema names `input`.
	private static func converted(_ text: String, input: SchemaFile.Input, what: String) throws(ToolError) -> Any {
		let flag: TypeFlag
		switch input {
		case .string: return text
		case .uuid:
			guard let uuid = UUID(uuidString: text) else {
				throw .badValue("\(what): \"\(text)\" is not a UUID; write other text with -string.")
			}
			return uuid.uuidString
		case .integer: flag = .integer
		case .real: flag = .float
		case .boolean: flag = .boolean
		case .date: flag = .date
		case .data: flag = .data
		case .url: flag = .url
		}
		do {
			return try scalar(text, as: flag)
		} catch {
			throw .badValue("\(what): \(error.message) Nothing was written; write other text with -string.")
		}
	}

	/// The flag that writes a value of the stored form's kind.
	private static func flag(forStoredForm stored: Any) -> String {
		switch stored {
		case is Bool: TypeFlag.boolean.token
		case is any BinaryInteger: TypeFlag.integer.token
		case is any BinaryFloatingPoint: TypeFlag.float.token
		case is Date: TypeFlag.date.token
		case is Data: TypeFlag.data.token
		case is [Any]: TypeFlag.array.token
		case is [String: Any]: TypeFlag.dictionary.token
		default: TypeFlag.string.token
		}
	}
}
