import Defaults
import Foundation

// `snapshot` and `verify`: pin a domain's stored forms in a file with `Defaults.Snapshot`, and check them later.
// The domain's file is read into an in-memory store, so that neither verb touches the settings file.

extension Verb.Declaration {
	static let snapshot = Verb.Declaration(
		synopsis: "<domain> <path | -> [<key>...]",
		summary: "write a snapshot of a domain's stored forms",
		details: """
			Writes the stored forms of the domain's keys (only the given keys, if any) to <path>, or to standard
			output for "-", as an XML property list with sorted keys: the file Defaults.Snapshot writes and checks,
			for review and version control. A snapshot of given keys records their names (the entry
			Defaults.Snapshot.keys), and verify then checks those keys only. <path> is written as export writes it. Exits 1 when the domain does not
			exist, 73 when <path> cannot be written.
			"""
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let destination = try arguments.take("snapshot path (or - for standard output)")
		let keys = arguments.positionals.isEmpty ? nil : arguments.positionals
		let store = try snapshotStore(of: domain)
		let data: Data
		do {
			data = try Defaults.Snapshot.data(of: store, names: keys)
		} catch {
			throw .badValue("The snapshot cannot be encoded: \(error).")
		}
		if destination == "-" {
			Output.raw(data)
		} else {
			// Written as `export` writes: links kept, devices and FIFOs refused, a new file 0600.
			try OutputFile.write(data, to: destination)
		}
		return .success
	}

	static let verify = Verb.Declaration(
		synopsis: "<domain> <path> [<key>...]",
		summary: "check a domain against a snapshot",
		details: """
			Compares the stored forms of the domain's keys (only the given keys, if any, else the keys the snapshot
			records) with the snapshot at <path> and prints every difference: a key missing from the domain, a key not in the snapshot, a changed form.
			Dates compare to the second, as XML property lists keep them. --json prints the differences as a JSON
			array. Exits 0 when they match, 1 when they differ, 66 when the snapshot cannot be read, 65 when it is
			not a snapshot.
			"""
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let path = try arguments.take("snapshot path")
		let keys = arguments.positionals.isEmpty ? nil : arguments.positionals
		let url = URL(filePath: path)
		guard FileManager.default.isReadableFile(atPath: url.path(percentEncoded: false)) else {
			throw ToolError("The snapshot \(path) does not exist or cannot be read.", status: .noInput)
		}
		let store = try snapshotStore(of: domain)
		let differences: [Defaults.Snapshot.Difference]
		do throws(Defaults.Snapshot.Error) {
			differences = try Defaults.Snapshot.differences(in: store, against: url, names: keys)
		} catch {
			throw .badValue(error.description)
		}
		if arguments.isJSON {
			let entries: [Any] = differences.map { difference in
				var entry: [String: Any] = ["key": difference.key, "kind": "\(difference.kind)"]
				entry["snapshot"] = difference.snapshotForm
				entry["stored"] = difference.storedForm
				return entry
			}
			Output.line(JSONFormat.encode(entries))
		} else if differences.isEmpty {
			Output.line("\(domain.name) matches the snapshot \(path).")
		} else {
			Output.line("\(domain.name) does not match the snapshot \(path):")
			for difference in differences {
				Output.line("- \(difference)")
			}
		}
		return differences.isEmpty ? .success : .notFound
	}

	/// The domain's values in a store of their own: the snapshot helpers take a store, and this one has no file.
	private static func snapshotStore(of domain: Domain) throws(ToolError) -> Defaults.InMemoryStore {
		let values = try domain.values(mustExist: true)
		do {
			return try Defaults.InMemoryStore(values: values)
		} catch {
			throw .badValue("The values of \(domain.name) cannot be stored: \(error).")
		}
	}
}
