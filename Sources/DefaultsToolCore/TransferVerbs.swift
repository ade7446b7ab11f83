import Defaults
import Foundation

// `export` and `import`: a whole domain to and from a property-list file or a pipe.

extension Verb.Declaration {
	static let exportDomain = Verb.Declaration(
		synopsis: "<domain> <path | ->",
		summary: "write a domain to an XML property list",
		details: """
			Writes every key of the domain to <path> (replaced atomically), or to standard output for "-", as an
			XML property list. Exits 1 when the domain does not exist, 73 when <path> cannot be written.
			"""
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let destination = try arguments.take("output path (or - for standard output)")
		try arguments.finish()
		let values = try domain.values(mustExist: true)
		let data: Data
		do {
			data = try PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0)
		} catch {
			throw ToolError("The domain \(domain.name) cannot be written as XML: \(error).", status: .dataError)
		}
		if destination == "-" {
			Output.raw(data)
			return .success
		}
		do {
			try data.write(to: URL(filePath: destination), options: .atomic)
		} catch {
			throw ToolError("\(destination) cannot be written: \(error.localizedDescription)", status: .cannotCreate)
		}
		return .success
	}

	static let importDomain = Verb.Declaration(
		synopsis: "<domain> <path | ->",
		summary: "replace a domain with a property list",
		details: """
			Reads a property list (XML, binary or OpenStep text) with a dictionary at the top from <path>, or from
			standard input for "-", and makes it the domain's contents: keys it lacks are removed. Exits 65 when
			the input is not such a property list, 66 when <path> cannot be read.
			"""
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let source = try arguments.take("input path (or - for standard input)")
		try arguments.finish()
		// A corrupt domain is refused before the input is read.
		_ = try domain.values(mustExist: false)
		let data: Data
		if source == "-" {
			data = FileHandle.standardInput.readDataToEndOfFile()
		} else {
			do {
				data = try Data(contentsOf: URL(filePath: source))
			} catch {
				throw ToolError("\(source) cannot be read: \(error.localizedDescription)", status: .noInput)
			}
		}
		let imported: [String: Any]
		do {
			imported = try PropertyListFile.decode(data)
		} catch {
			throw .badValue(
				"\(source == "-" ? "Standard input" : source) is not usable: \(error); nothing was imported.")
		}
		let store = try domain.openStore()
		for key in store.storedKeys() where imported[key] == nil {
			store.removeValue(forKey: key)
		}
		for key in imported.keys.sorted() {
			do {
				try store.write(imported[key], forKey: key)
			} catch {
				throw .badValue("The value of \(key) cannot be stored: \(error).")
			}
		}
		try domain.flush(store)
		return .success
	}
}
