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
			through, the stored form of its default, whether it is synced, whether an administrator locked it (as
			the locks files read now, naming the file), and, for a stored value that
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
		// The locks as the app reads them now, from the locks files of $XDG_CONFIG_DIRS: the schema's flag is only what
		// they were when the app wrote it.
		let layers = try domain.layers(mustExist: false)
		let stored = layers.stored
		let isLocked = { (name: String) in layers.lockedBy[name] != nil }
		if arguments.isJSON {
			var all: [String: Any] = [:]
			for entry in schema.entries {
				var fields: [String: Any] = [
					"type": entry.type, "bridge": entry.bridge, "synced": entry.isSynced,
					"locked": isLocked(entry.name),
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
			if let file = layers.lockedBy[entry.name] {
				line += ", locked by \(file)"
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
		if let entry, let flag = tokens.first.flatMap(TypeFlag.init(token:)), !flag.isScalar {
			try self.init(elements: tokens, flag: flag, key: key, entry: entry)
			return
		}
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

	/// `-array`, `-array-add`, `-dict` or `-dict-add` with their elements, for a key the schema describes: refused for
	/// a key that is not that kind of collection, with the flag to use; each bare element converted to what the key
	/// reads (the elements of a `Key<[URL]>` as the app's URL bridge writes them), or refused. Elements typed by a
	/// flag are written as they say.
	private init(elements tokens: [String], flag: TypeFlag, key: String, entry: SchemaFile.Entry) throws(ToolError) {
		let parsed = try WriteRequest(tokens: tokens)
		let what = "The key \(key) is a \(entry.type) (its app's schema says so)"
		let isDictionary = flag == .dictionary || flag == .dictionaryAdd
		let elementShape: StoredShape?
		switch entry.shape {
		case .array(let element)? where !isDictionary: elementShape = element
		case .map(let element)? where isDictionary: elementShape = element
		case .record? where isDictionary, nil: elementShape = nil
		case let shape?:
			var use = entry.storedDefault.map { Self.flag(forStoredForm: $0.value) } ?? Self.flag(forShape: shape)
			if case .jsonText = shape {
				use = TypeFlag.json.token
			}
			throw .badValue(
				"\(what), not \(isDictionary ? "a dictionary" : "an array"): write it with \(use); nothing was written."
			)
		}
		let bare = Self.bareElements(Array(tokens.dropFirst()), isDictionary: isDictionary)
		func convert(_ value: Any, at position: String, isBare: Bool) throws(ToolError) -> Any {
			guard isBare, let text = value as? String else {
				return value
			}
			if let input = entry.elementInput {
				return try Self.converted(text, input: input, what: "\(what), and its element \(position)")
			}
			if case .jsonText? = elementShape {
				throw .badValue(
					"\(what), whose elements are stored as JSON text: write the element \(position) with -json before "
						+ "it; nothing was written.")
			}
			return value
		}
		switch parsed {
		case .set(let array as [Any]), .appendToArray(let array):
			var converted: [Any] = []
			for (index, element) in array.enumerated() {
				converted.append(try convert(element, at: "\(index + 1)", isBare: bare.indices.contains(index)))
			}
			self = flag == .arrayAdd ? .appendToArray(converted) : .set(converted)
		case .set(let dictionary as [String: Any]), .addToDictionary(let dictionary):
			var converted: [String: Any] = [:]
			for name in dictionary.keys.sorted() {
				converted[name] = try convert(dictionary[name]!, at: "'\(name)'", isBare: bare.names.contains(name))
			}
			self = flag == .dictionaryAdd ? .addToDictionary(converted) : .set(converted)
		case .set:
			self = parsed
		}
	}

	/// Which elements (by position) or values (by name) of a collection flag's `tokens` were given bare, without a
	/// type flag before them; the tokens already parsed.
	private static func bareElements(_ tokens: [String], isDictionary: Bool) -> (indices: Set<Int>, names: Set<String>)
	{
		var indices: Set<Int> = []
		var names: Set<String> = []
		var index = tokens.startIndex
		var position = 0
		while index < tokens.endIndex {
			var name: String?
			if isDictionary {
				name = tokens[index]
				index += 1
				guard index < tokens.endIndex else {
					break
				}
			}
			let isBare = TypeFlag(token: tokens[index]) == nil
			index += isBare ? 1 : 2
			if isBare {
				indices.insert(position)
			}
			if let name {
				// A name given twice takes its last value, as the dictionary does.
				if isBare { names.insert(name) } else { names.remove(name) }
			}
			position += 1
		}
		return (indices, names)
	}

	/// The flag that writes a value of `shape`.
	private static func flag(forShape shape: StoredShape) -> String {
		switch shape {
		case .integer: TypeFlag.integer.token
		case .real, .number: TypeFlag.float.token
		case .boolean: TypeFlag.boolean.token
		case .date: TypeFlag.date.token
		case .data: TypeFlag.data.token
		case .jsonText: TypeFlag.json.token
		case .array: TypeFlag.array.token
		case .map, .record: TypeFlag.dictionary.token
		case .string: TypeFlag.string.token
		}
	}

	/// The stored `value` an import gives the key of `entry`, as the app reads it: kept when it may decode, or
	/// converted from its text when it is text of the key's input (a URL as the app's `Key<URL>` stores it), element by
	/// element for a collection of such elements; `nil` when it neither decodes nor converts, with why in `reason`.
	static func imported(_ value: Any, for entry: SchemaFile.Entry) -> Result<Any, ImportRefusal> {
		var value = value
		if let input = entry.input, misfit(value, for: entry) != nil {
			guard let text = value as? String else {
				return .failure(ImportRefusal(reason: misfit(value, for: entry)!))
			}
			do {
				value = try convertedValue(text, input: input)
			} catch {
				return .failure(ImportRefusal(reason: error.message))
			}
		}
		if let input = entry.elementInput {
			var element = entry
			element.input = input
			element.shape = nil
			element.storedDefault = nil
			func convert(_ item: Any, at position: String) -> Result<Any, ImportRefusal> {
				imported(item, for: element).mapError { ImportRefusal(reason: "the element \(position): \($0.reason)") }
			}
			if let array = value as? [Any] {
				var converted: [Any] = []
				for (index, item) in array.enumerated() {
					switch convert(item, at: "\(index + 1)") {
					case .success(let item): converted.append(item)
					case .failure(let refusal): return .failure(refusal)
					}
				}
				value = converted
			} else if let dictionary = value as? [String: Any] {
				var converted: [String: Any] = [:]
				for name in dictionary.keys.sorted() {
					switch convert(dictionary[name]!, at: "'\(name)'") {
					case .success(let item): converted[name] = item
					case .failure(let refusal): return .failure(refusal)
					}
				}
				value = converted
			}
		}
		if let why = whyNotDecoding(value, for: entry) {
			return .failure(ImportRefusal(reason: why))
		}
		return .success(value)
	}

	/// Why an imported value was refused.
	struct ImportRefusal: Error {
		let reason: String
	}

	/// `text` as the stored form of a key whose schema names `input`, or the error of a write.
	private static func converted(_ text: String, input: SchemaFile.Input, what: String) throws(ToolError) -> Any {
		do {
			return try convertedValue(text, input: input)
		} catch {
			throw .badValue("\(what): \(error.message) Nothing was written; write other text with -string.")
		}
	}

	/// `text` as the stored form of a key whose schema names `input`; the error says what the text is not.
	private static func convertedValue(_ text: String, input: SchemaFile.Input) throws(ToolError) -> Any {
		let flag: TypeFlag
		switch input {
		case .string: return text
		case .uuid:
			guard let uuid = UUID(uuidString: text) else {
				throw .badValue("\"\(text)\" is not a UUID.")
			}
			return uuid.uuidString
		case .integer: flag = .integer
		case .real: flag = .float
		case .boolean: flag = .boolean
		case .date: flag = .date
		case .data: flag = .data
		case .url: flag = .url
		}
		return try scalar(text, as: flag)
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
