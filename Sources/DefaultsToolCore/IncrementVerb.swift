import Defaults
import Foundation

// `increment`: an atomic read-modify-write for shell scripts, under the settings file's lock, so that scripts and
// programs incrementing one counter at the same time lose no increment.

extension Verb.Declaration {
	static let increment = Verb.Declaration(
		synopsis: "<domain> <key>",
		summary: "add to an integer atomically",
		details: """
			Adds 1 (or the amount of --by) to the integer stored for <key> and prints the new value. A key with no
			value counts as 0. The file is read, changed and written under its lock, so that increments from
			several scripts and programs at once are all counted, and programs using Defaults.update on the same
			key take turns with it:
			  defaults increment app launches
			  defaults increment app credits --by -5
			Exits 65 when the stored value is not an integer or the sum would overflow, 77 when an administrator
			locked the key; nothing is written then. It adds to the user's value, never to a system-wide default.
			For a key synced through etcd, the increment is atomic on this machine; the app's sync engine pushes
			the result as a plain write. Across machines, use try await Defaults.update in the app.
			""",
		options: [OptionSpec(name: "--by", valueName: "n", help: "add <n>, a whole number, which may be negative")]
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let key = try arguments.take("key")
		try arguments.finish()
		let amount = try Increment.amount(arguments.options["--by"])
		try domain.layers(mustExist: false).refuseLocked([key], in: domain)
		let store = try domain.openStore()
		let sum = try domain.update(key, in: store) { values in
			let sum = try Increment.sum(of: values[key], and: amount, key: key, domain: domain.name)
			values[key] = sum
			return sum
		} otherError: { error in
			ToolError("\(error)", status: .ioError)
		}
		if let failure = FailureLog.shared.takeStorageFailure() {
			throw ToolError(failure, status: .ioError)
		}
		Output.line("\(sum)")
		return .success
	}
}

/// The parsing and arithmetic of `increment`, apart from the file, so that all of it is checked before anything is
/// written.
enum Increment {
	/// The amount `--by` gives, or 1.
	static func amount(_ text: String?) throws(ToolError) -> Int {
		guard let text else {
			return 1
		}
		guard let amount = Int(text) else {
			throw .badValue("The amount \"\(text)\" is not a whole number; nothing was written.")
		}
		return amount
	}

	/// `amount` added to `current`, the stored value (`nil`: none, which counts as 0).
	static func sum(of current: Any?, and amount: Int, key: String, domain: String) throws(ToolError) -> Int {
		let value: Int
		switch current {
		case nil:
			value = 0
		case let integer as Int where !(current is Bool):
			value = integer
		case let big as UInt64:
			throw .badValue(
				"The value of \(key) in \(domain), \(big), is beyond the integers increment adds to; nothing was "
					+ "written.")
		case let current?:
			throw .badValue(
				"The value of \(key) in \(domain) is a \(Defaults.PropertyList.typeName(of: current)), not an "
					+ "integer; nothing was written.")
		}
		let (sum, overflows) = value.addingReportingOverflow(amount)
		guard !overflows else {
			throw .badValue(
				"Adding \(amount) to \(value), the value of \(key) in \(domain), overflows; nothing was written.")
		}
		return sum
	}
}
