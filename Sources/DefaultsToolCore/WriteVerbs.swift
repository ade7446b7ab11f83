import Defaults
import Foundation

// `write`, `delete` and `rename`: they change a domain through its file store, so that the file is replaced
// atomically, other processes' changes to it are kept, and observers in every process hear of the change.

extension Verb {
	static let write = Verb(
		name: "write", synopsis: "<domain> <key> [<type flag>] <value>...",
		summary: "write a value",
		details: """
			A bare value is written as text, unless it is a property list in text form ('(a, b)', '{ a = 1; }',
			XML), which is written as that list or dictionary. A type flag before the value says how to read it:
			  -string <text>             text
			  -int, -integer <number>    an integer (up to 18446744073709551615)
			  -float <number>            a real number
			  -bool, -boolean <value>    yes, no, true, false, 1 or 0
			  -date <date>               2024-05-01T12:00:00Z (ISO 8601), "2024-05-01 12:00:00 +0000",
			                             or 2024-05-01 (midnight UTC)
			  -data <hex>                bytes in hexadecimal: 0badcafe
			  -array <value>...          an array, replacing the value
			  -array-add <value>...      appended to the array (a new array if there is none)
			  -dict <key> <value>...     a dictionary, replacing the value
			  -dict-add <key> <value>... entries added to the dictionary (a new one if there is none)
			Elements of arrays and values of dictionaries are text, or typed by a flag before them:
			  defaults write app sizes -array -int 10 -int 20
			Text that looks like a flag follows --: defaults write app key -- -h
			Exits 65 when a value does not parse as its type.
			"""
	) { context, tokens throws(ToolError) in
		let (domainReference, key, valueTokens) = try writeArguments(tokens)
		let request = try WriteRequest(tokens: valueTokens)
		let domain = try Domain(domainReference, verb: "write")
		let store = try domain.openStore()
		let value: Any
		switch request {
		case .set(let newValue):
			value = newValue
		case .appendToArray(let elements):
			let current = store.storedValue(forKey: key) ?? [Any]()
			guard let array = current as? [Any] else {
				throw .badValue(
					"The value of \(key) in \(domain.name) is a \(TextFormat.typeName(current)), not an array; "
						+ "nothing was written.")
			}
			value = array + elements
		case .addToDictionary(let entries):
			let current = store.storedValue(forKey: key) ?? [String: Any]()
			guard let dictionary = current as? [String: Any] else {
				throw .badValue(
					"The value of \(key) in \(domain.name) is a \(TextFormat.typeName(current)), not a dictionary; "
						+ "nothing was written.")
			}
			value = dictionary.merging(entries) { _, new in new }
		}
		do {
			try store.write(value, forKey: key)
		} catch {
			throw .badValue("The value cannot be stored: \(error).")
		}
		try domain.flush(store)
		return .success
	}

	/// Splits `write`'s arguments: the domain (or `-app <path>`) and the key, then the value part, which is left
	/// for ``WriteRequest`` because values may start with `-`.
	private static func writeArguments(
		_ tokens: [String]
	) throws(ToolError) -> (DomainReference, String, [String]) {
		var rest = tokens[...]
		var domain: DomainReference?
		if rest.first == "-app" {
			rest = rest.dropFirst()
			guard let path = rest.popFirst() else {
				throw .usage("-app needs a value.", verb: "write")
			}
			domain = .file(path)
		}
		if domain == nil {
			guard let name = rest.popFirst() else {
				throw .usage("Missing domain.", verb: "write")
			}
			if name.hasPrefix("-"), name != "-" {
				throw .usage("Unknown option \"\(name)\" for write.", verb: "write")
			}
			domain = DomainReference(argument: name)
		}
		guard let key = rest.popFirst() else {
			throw .usage("Missing key.", verb: "write")
		}
		return (domain!, key, Array(rest))
	}

	static let delete = Verb(
		name: "delete", synopsis: "<domain> [<key>]",
		summary: "delete a key, or every key of a domain",
		details: """
			With a key, removes it; with none, removes every key of the domain (the file stays, empty, so that
			programs that have it open keep a consistent view). Exits 1 when the domain or key does not exist.
			"""
	) { context, tokens throws(ToolError) in
		var context = context
		var arguments = try VerbArguments(tokens, verb: "delete", context: &context)
		let domain = try Domain(arguments.takeDomain(), verb: "delete")
		let key = arguments.takeIfPresent()
		try arguments.finish()
		let values = try domain.values(mustExist: true)
		if let key, values[key] == nil {
			throw .notFound("The domain/default pair of (\(domain.name), \(key)) does not exist.")
		}
		let store = try domain.openStore()
		let keys = key.map { [$0] } ?? store.storedKeys().sorted()
		for key in keys {
			store.removeValue(forKey: key)
		}
		try domain.flush(store)
		return .success
	}

	static let rename = Verb(
		name: "rename", synopsis: "<domain> <old key> <new key>",
		summary: "rename a key, keeping its value",
		details: """
			Moves the value of <old key> to <new key>, replacing any value there. Exits 1 when <old key> does not
			exist.
			"""
	) { context, tokens throws(ToolError) in
		var context = context
		var arguments = try VerbArguments(tokens, verb: "rename", context: &context)
		let domain = try Domain(arguments.takeDomain(), verb: "rename")
		let oldKey = try arguments.take("old key")
		let newKey = try arguments.take("new key")
		try arguments.finish()
		_ = try domain.values(mustExist: true)
		let store = try domain.openStore()
		guard let value = store.storedValue(forKey: oldKey), store.storedKeys().contains(oldKey) else {
			throw .notFound("Key \(oldKey) does not exist in domain \(domain.name); nothing was renamed.")
		}
		guard oldKey != newKey else {
			return .success
		}
		do {
			try store.write(value, forKey: newKey)
		} catch {
			throw .badValue("The value cannot be stored: \(error).")
		}
		store.removeValue(forKey: oldKey)
		try domain.flush(store)
		return .success
	}
}
