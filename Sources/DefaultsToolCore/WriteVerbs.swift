import Defaults
import Foundation

// `write`, `delete` and `rename`: they change a domain through its file store, so that the file is replaced
// atomically, other processes' changes to it are kept, and observers in every process hear of the change. They change
// the user's file only, and refuse, before anything is written, a key an administrator locked.

extension Verb.Declaration {
	static let write = Verb.Declaration(
		synopsis: "<domain> <key> [<type flag>] <value>...",
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
			  -url <url or path>         a URL as a Key<URL> stores it: file:///tmp/x, https://example.com
			  -json <JSON>               a Codable value's JSON text, checked: '{"width":640}'
			  -array <value>...          an array, replacing the value
			  -array-add <value>...      appended to the array (a new array if there is none)
			  -dict <key> <value>...     a dictionary, replacing the value
			  -dict-add <key> <value>... entries added to the dictionary (a new one if there is none)
			Elements of arrays and values of dictionaries are text, or typed by a flag before them:
			  defaults write app sizes -array -int 10 -int 20
			Text that looks like a flag follows --: defaults write app key -- -h
			Writes the user's value: a system-wide default is left as it is, and a key an administrator locked is
			refused (exit 77, nothing written). -array-add and -dict-add add to the user's value.
			With -system, run as root, writes the system-wide default in <name>.plist of the first folder of
			$XDG_CONFIG_DIRS (else /etc/xdg) instead, as an XML property list.
			When the app wrote a schema beside its settings file, or -schema names one (see the keys verb), a
			bare value is converted to the key's type, or refused with the flag to use, and so is each bare
			element of -array, -array-add, -dict and -dict-add; -system writes follow it too.
			Exits 65 when a value does not parse as its type.
			""",
		options: [.system, .schema],
		valuesAfter: 2
	) { arguments throws(ToolError) in
		if arguments.has(OptionSpec.system.name) {
			return try writeSystemDefault(&arguments)
		}
		let domain = try arguments.takeDomainFile()
		let key = try arguments.take("key")
		let request = try WriteRequest(
			tokens: arguments.values, key: key,
			entry: try arguments.schema(besideSettingsFile: domain.url)?.entry(named: key))
		try domain.layers(mustExist: false).refuseLocked([key], in: domain)
		let store = try domain.openStore()
		// Adding to a value is a read and a write: made as one update under the file's lock, so that additions from
		// several processes at once are all kept.
		try domain.update(key, in: store) { values in
			values[key] = try request.value(adding: values[key], key: key, domain: domain.name)
		} otherError: { error in
			.badValue("The value cannot be stored: \(error).")
		}
		try domain.flush(store)
		return .success
	}

	static let delete = Verb.Declaration(
		synopsis: "<domain> [<key>]",
		summary: "delete a key, or every key of a domain",
		details: """
			With a key, removes it; with none, removes every key of the domain (the file stays, empty, so that
			programs that have it open keep a consistent view). Removes the user's values only: a system-wide default
			stays. Exits 1 when the domain or key does not exist in the user's file, 77 (nothing removed) when an
			administrator locked the key, or one of the domain's keys.
			With -system, run as root, removes the system-wide default (or every one) from <name>.plist of the
			first folder of $XDG_CONFIG_DIRS (else /etc/xdg) instead.
			""",
		options: [.system]
	) { arguments throws(ToolError) in
		if arguments.has(OptionSpec.system.name) {
			return try deleteSystemDefault(&arguments)
		}
		let domain = try arguments.takeDomainFile()
		let key = arguments.takeIfPresent()
		try arguments.finish()
		let layers = try domain.layers(mustExist: false)
		guard layers.storedFileExists else {
			throw .notFound("Domain \(domain.name) does not exist (no file at \(domain.path)).")
		}
		if let key {
			try layers.refuseLocked([key], in: domain)
			try layers.refuseMissingStored(key, in: domain)
		} else {
			try layers.refuseLocked(layers.stored.keys, in: domain)
		}
		let store = try domain.openStore()
		// One update under the file's lock, which checks the locks again: a lock that lands after the check above
		// refuses the removal with the locked status and removes nothing. The domain's keys are listed under that lock,
		// so that a key another process stored since the check is removed too.
		try domain.update({ key.map { [$0] } ?? store.storedKeys().sorted() }, ownValuesOnly: true, in: store) {
			values in
			values.removeAll()
		} otherError: { error in
			ToolError("The values could not be removed: \(error).", status: .ioError)
		}
		try domain.flush(store)
		return .success
	}

	static let rename = Verb.Declaration(
		synopsis: "<domain> <old key> <new key>",
		summary: "rename a key, keeping its value",
		details: """
			Moves the user's value of <old key> to <new key>, replacing any value there. Exits 1 when <old key> has
			no value in the user's file, 77 (nothing changed) when an administrator locked either key.
			"""
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let oldKey = try arguments.take("old key")
		let newKey = try arguments.take("new key")
		try arguments.finish()
		let layers = try domain.layers(mustExist: false)
		guard layers.storedFileExists else {
			throw .notFound("Domain \(domain.name) does not exist (no file at \(domain.path)).")
		}
		guard layers.stored[oldKey] != nil else {
			throw .notFound("Key \(oldKey) does not exist in domain \(domain.name); nothing was renamed.")
		}
		if oldKey != newKey {
			try layers.refuseLocked([oldKey, newKey], in: domain)
		}
		let store = try domain.openStore()
		let missing = ToolError.notFound("Key \(oldKey) does not exist in domain \(domain.name); nothing was renamed.")
		guard store.storedKeys().contains(oldKey) else {
			throw missing
		}
		guard oldKey != newKey else {
			return .success
		}
		// Both keys in one update under the file's lock, which checks the locks again (see delete); the value moved is
		// the one the file holds under that lock, not the one read when the store opened, which another process may
		// have replaced since.
		try domain.update({ [oldKey, newKey] }, ownValuesOnly: true, in: store) { values in
			guard let value = values[oldKey] else {
				throw missing
			}
			values[newKey] = value
			values[oldKey] = nil
		} otherError: { error in
			.badValue("The value cannot be stored: \(error).")
		}
		try domain.flush(store)
		return .success
	}
}
