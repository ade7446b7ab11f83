import Defaults
import Foundation

// `export` and `import`: a whole domain to and from a property-list file or a pipe.

extension Verb.Declaration {
	static let exportDomain = Verb.Declaration(
		synopsis: "<domain> <path | ->",
		summary: "write a domain to an XML property list",
		details: """
			Writes every key of the domain, as read prints it (locked values included, and system-wide defaults), to
			<path> (replaced atomically; a link is written through; a new file is mode 0600), or to standard output
			for "-", as an XML property list. A <path> that is a device, a
			FIFO, a socket or a folder is refused. Exits 1 when the domain does not exist, 73 when <path> cannot be
			written.
			"""
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let destination = try arguments.take("output path (or - for standard output)")
		try arguments.finish()
		let values = try domain.layers(mustExist: true).values
		let data = XMLFormat.document(values)
		if destination == "-" {
			Output.raw(data)
			return .success
		}
		try OutputFile.write(data, to: destination)
		return .success
	}

	static let importDomain = Verb.Declaration(
		synopsis: "<domain> <path | ->",
		summary: "replace a domain with a property list",
		details: """
			Reads a property list (XML, binary or OpenStep text) with a dictionary at the top from <path>, or from
			standard input for "-", and makes it the domain's contents: keys it lacks are removed. Every value is
			checked first: if any cannot be stored, nothing changes. At most 64 MiB are read. Exits 65 when the
			input is not such a property list or is larger, 66 when <path> cannot be read, 77 (nothing changed)
			when it would set, change or remove the user's value of a key an administrator locked.
			When the app wrote a schema beside its settings file, or -schema names one (see the keys verb), each
			value it describes is checked as write checks a bare value: kept when it decodes as the app reads it,
			text converted to the key's type (a URL as the app's Key<URL> stores it, each element of a Key<[URL]>),
			and a value that neither decodes nor converts refuses the whole import (65, nothing changed). A value
			equal to the one stored now is kept as it is.
			""",
		options: [.schema]
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let source = try arguments.take("input path (or - for standard input)")
		try arguments.finish()
		// A corrupt domain and a schema that does not read are refused before the input is read.
		let layers = try domain.layers(mustExist: false)
		let schema = try arguments.schema(besideSettingsFile: domain.url)
		let data = try ImportInput.bytes(from: source)
		let imported: [String: Any]
		do {
			imported = try PropertyListFile.decode(data)
		} catch {
			throw .badValue(
				"\(source == "-" ? "Standard input" : source) is not usable: \(error); nothing was imported.")
		}
		// Every value is normalised before the store is opened: one that cannot be stored (a NaN date) refuses the
		// whole import while nothing has changed, so the exit flush has nothing half done to write.
		var normalized: [String: Any] = [:]
		for key in imported.keys.sorted() {
			do {
				normalized[key] = try Defaults.PropertyList.normalize(imported[key]!)
			} catch {
				throw .badValue("The value of \(key) cannot be stored: \(error); nothing was imported.")
			}
		}
		// Each value the schema describes becomes what the app reads, or refuses the import, before anything changes.
		for key in normalized.keys.sorted() {
			guard let entry = schema?.entry(named: key),
				!Defaults.PropertyList.isEqualOrBothAbsent(layers.stored[key], normalized[key])
			else {
				continue
			}
			switch WriteRequest.imported(normalized[key]!, for: entry) {
			case .success(let value):
				normalized[key] = value
			case .failure(let refusal):
				throw .badValue(
					"The value of \(key) is not what the app's \(entry.type) reads (its schema says so): "
						+ "\(refusal.reason); nothing was imported.")
			}
		}
		// A locked key whose user's value the import would set, change or remove refuses the whole import.
		try layers.refuseLocked(
			Set(layers.stored.keys).union(normalized.keys).filter {
				!Defaults.PropertyList.isEqualOrBothAbsent(layers.stored[$0], normalized[$0])
			}, in: domain)
		let store = try domain.openStore()
		// One update under the file's lock, which checks the locks again: a lock that lands after the check above
		// refuses the whole import with the locked status and changes nothing. The file's keys are listed under that
		// lock, so that a key another process stored since is replaced too.
		try domain.update(
			{ Set(store.storedKeys()).union(normalized.keys).sorted() }, ownValuesOnly: true, in: store
		) { values in
			values = normalized
		} otherError: { error in
			.badValue("The import cannot be stored: \(error); nothing was imported.")
		}
		try domain.flush(store)
		return .success
	}
}
