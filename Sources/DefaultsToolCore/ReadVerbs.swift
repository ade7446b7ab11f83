import Defaults
import Foundation

// `read`, `read-type`, `domains` and `find`: they parse files and never open a store, so they change nothing on disk.
// They read a domain through its layers (`DomainLayers`), as the app reads it.

extension Verb.Declaration {
	static let read = Verb.Declaration(
		synopsis: "[<domain> [<key>]]",
		summary: "print a domain, one key of it, or every domain",
		details: """
			With no domain, prints every domain of the configuration folder. With a domain, prints its keys and
			values; with a key too, prints that value (text as it is, anything else in property-list text form).
			A domain reads as the app reads it: values an administrator locked (<name>.locks.plist) above the
			user's values, above the system-wide defaults, <name>.plist, both in the folders of $XDG_CONFIG_DIRS
			(else /etc/xdg), the first folder winning. A file outside the configuration folder is read alone.
			-source prints each key on one line, "key = value; (layer, file)": the layer that gives the value
			(locked, stored: the user's file, or system) and its file.
			--json prints JSON instead: dates as ISO 8601 text, data as Base64; with -source, an object of
			{"value", "layer", "file"} for each key.
			With a key, -url and -json print the value as the app's key reads it, the way write takes it: -url a
			URL (a Key<URL> stores JSON text), -json the JSON text of a Codable value, indented. A value that is not
			in that form exits 65.
			Exits 1 when the domain or key does not exist.
			""",
		options: [.readAsURL, .readAsJSON, .readSource]
	) { arguments throws(ToolError) in
		guard !arguments.positionals.isEmpty || arguments.has(OptionSpec.app.name) else {
			try arguments.finish()
			if arguments.has(OptionSpec.readSource.name) {
				throw .usage("-source needs a domain.", verb: arguments.verb)
			}
			return try readAll(isJSON: arguments.isJSON)
		}
		let domain = try arguments.takeDomainFile()
		let key = arguments.takeIfPresent()
		try arguments.finish()
		let layers = try domain.layers(mustExist: true)
		if arguments.has(OptionSpec.readSource.name) {
			if arguments.has(OptionSpec.readAsURL.name) || arguments.has(OptionSpec.readAsJSON.name) {
				throw .usage(
					"-source prints values as read does; it does not go with -url or -json.", verb: arguments.verb)
			}
			return try printSources(of: layers, key: key, domain: domain, isJSON: arguments.isJSON)
		}
		let values = layers.values
		guard let key else {
			Output.line(arguments.isJSON ? JSONFormat.encode(values) : TextFormat.describe(values))
			return .success
		}
		guard let value = values[key] else {
			throw .notFound("The domain/default pair of (\(domain.name), \(key)) does not exist.")
		}
		if arguments.has(OptionSpec.readAsURL.name) {
			Output.line(try StoredText.url(value, key: key))
		} else if arguments.has(OptionSpec.readAsJSON.name) {
			Output.line(try StoredText.json(value, key: key))
		} else {
			Output.line(arguments.isJSON ? JSONFormat.encode(value) : TextFormat.topLevel(value))
		}
		return .success
	}

	/// `read -source`: each key's value with the layer and the file it comes from.
	private static func printSources(
		of layers: DomainLayers, key: String?, domain: Domain, isJSON: Bool
	) throws(ToolError) -> ExitStatus {
		let values = layers.values
		let keys = key.map { [$0] } ?? values.keys.sorted()
		var entries: [String: Any] = [:]
		var lines: [String] = []
		for key in keys {
			guard let value = values[key], let source = layers.source(of: key) else {
				throw .notFound("The domain/default pair of (\(domain.name), \(key)) does not exist.")
			}
			entries[key] = ["value": value, "layer": source.layer.rawValue, "file": source.file]
			lines.append(
				"\(TextFormat.compact(key)) = \(TextFormat.compact(value)); (\(source.layer.rawValue), \(source.file))")
		}
		if isJSON {
			Output.line(JSONFormat.encode(key.flatMap { entries[$0] } ?? entries))
		} else {
			lines.forEach(Output.line)
		}
		return .success
	}

	/// Every named domain as one dictionary; a corrupt file is reported and left out.
	private static func readAll(isJSON: Bool) throws(ToolError) -> ExitStatus {
		var all: [String: Any] = [:]
		var status = ExitStatus.success
		for domain in Domain.allNamed() {
			do throws(ToolError) {
				all[domain.name] = try domain.layers(mustExist: false).values
			} catch {
				Output.error(error.message)
				status = error.status
			}
		}
		Output.line(isJSON ? JSONFormat.encode(all) : TextFormat.describe(all))
		return status
	}

	static let readType = Verb.Declaration(
		synopsis: "<domain> <key>",
		summary: "print the type of a key's value",
		details: """
			Prints "Type is <type>", the type being one of string, integer, float, boolean, date, data, array and
			dictionary. --json prints the type as a JSON string. Exits 1 when the key does not exist.
			"""
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let key = try arguments.take("key")
		try arguments.finish()
		guard let value = try domain.layers(mustExist: true).values[key] else {
			throw .notFound("The domain/default pair of (\(domain.name), \(key)) does not exist.")
		}
		let type = Defaults.PropertyList.typeName(of: value)
		Output.line(arguments.isJSON ? JSONFormat.string(type) : "Type is \(type)")
		return .success
	}

	static let domains = Verb.Declaration(
		synopsis: "",
		summary: "list the domains of the configuration folder",
		details: """
			Lists the names of the *.plist files in $XDG_CONFIG_HOME (else ~/.config), separated by commas as on
			macOS. --json prints a JSON array.
			"""
	) { arguments throws(ToolError) in
		try arguments.finish()
		let names = Domain.allNamed().map(\.name)
		Output.line(arguments.isJSON ? JSONFormat.encode(names, pretty: false) : names.joined(separator: ", "))
		return .success
	}

	static let find = Verb.Declaration(
		synopsis: "<word>",
		summary: "search every domain's keys and values for a word",
		details: """
			Prints, for each domain whose name, keys or values contain <word> (ignoring case), the matching keys and
			their values (every key, when the domain name matches). --json prints an object of domains. Exits 1
			when nothing matches.
			"""
	) { arguments throws(ToolError) in
		let word = try arguments.take("word")
		try arguments.finish()
		var found: [String: [String: Any]] = [:]
		for domain in Domain.allNamed() {
			let values: [String: Any]
			do throws(ToolError) {
				values = try domain.layers(mustExist: false).values
			} catch {
				Output.error(error.message)
				continue
			}
			let matches =
				contains(domain.name, word)
				? values : values.filter { key, value in contains(key, word) || valueContains(value, word) }
			if !matches.isEmpty {
				found[domain.name] = matches
			}
		}
		guard !found.isEmpty else {
			throw .notFound("No domain, key or value contains \"\(word)\".")
		}
		if arguments.isJSON {
			Output.line(JSONFormat.encode(found))
		} else {
			for name in found.keys.sorted() {
				let matches = found[name]!
				Output.line(
					"Found \(matches.count) key\(matches.count == 1 ? "" : "s") in domain '\(name)': "
						+ TextFormat.describe(matches))
			}
		}
		return .success
	}

	private static func contains(_ text: String, _ word: String) -> Bool {
		text.range(of: word, options: .caseInsensitive) != nil
	}

	/// Whether `value`, or anything inside it (dictionary keys too), shows `word` in its text form.
	private static func valueContains(_ value: Any, _ word: String) -> Bool {
		switch value {
		case let string as String: contains(string, word)
		case let array as [Any]: array.contains { valueContains($0, word) }
		case let dictionary as [String: Any]:
			dictionary.contains { key, element in contains(key, word) || valueContains(element, word) }
		default: contains(TextFormat.compact(value), word)
		}
	}
}

extension OptionSpec {
	/// `read … -url`: the value as a `Key<URL>` reads it.
	static let readAsURL = OptionSpec(name: "-url", help: "print the value as the URL a Key<URL> reads from it")
	/// `read … -json`: the JSON text a `Codable` key stored, indented.
	static let readAsJSON = OptionSpec(name: "-json", help: "print the JSON text a Codable key stored, indented")
	/// `read … -source`: where each value comes from.
	static let readSource = OptionSpec(
		name: "-source", help: "print each key with the layer and the file its value comes from")
}

/// Stored values shown as the app's keys read them: what `write -url` and `write -json` store, read back.
enum StoredText {
	/// The URL a `Key<URL>` reads from `stored`, through the library's own bridge.
	static func url(_ stored: Any, key: String) throws(ToolError) -> String {
		let store = Defaults.InMemoryStore()
		store.setStoredValue(stored, forKey: key)
		switch Defaults.storedState(of: Defaults.Key<URL?>(key, suite: store)) {
		case .current(let url?), .olderForm(let url?, _):
			return url.absoluteString
		case .undecodable(let error):
			throw .badValue("The value of \(key) is not a URL as a Key<URL> stores it: \(error.reason).")
		default:
			throw .badValue("The value of \(key) is not a URL as a Key<URL> stores it.")
		}
	}

	/// The JSON text in `stored`, indented with sorted keys.
	static func json(_ stored: Any, key: String) throws(ToolError) -> String {
		guard let text = stored as? String,
			let object = try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed),
			let data = try? JSONSerialization.data(
				withJSONObject: object,
				options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
		else {
			throw .badValue("The value of \(key) is not JSON text, as a Codable key stores its values.")
		}
		return String(decoding: data, as: UTF8.self)
	}
}
