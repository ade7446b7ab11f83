/// The verbs of the command, in the order the overview lists them.
///
/// A verb is declared once, in its ``Declaration``; its name is its raw value here. Adding a case without a
/// declaration does not compile, and there is no other list of verbs to keep up to date: parsing, the usage line,
/// the help page and the overview all derive from these two.
enum Verb: String, CaseIterable, Sendable {
	case read
	case readType = "read-type"
	case write, increment, delete, rename, lock, unlock, domains, find
	case exportDomain = "export"
	case importDomain = "import"
	case watch, snapshot, verify, keys

	/// What the verb takes, says and does.
	var declaration: Declaration {
		switch self {
		case .read: .read
		case .readType: .readType
		case .write: .write
		case .increment: .increment
		case .delete: .delete
		case .rename: .rename
		case .lock: .lock
		case .unlock: .unlock
		case .domains: .domains
		case .find: .find
		case .exportDomain: .exportDomain
		case .importDomain: .importDomain
		case .watch: .watch
		case .snapshot: .snapshot
		case .verify: .verify
		case .keys: .keys
		}
	}

	/// The name typed on the command line.
	var name: String { rawValue }

	/// Every verb, in the order the overview lists them.
	static var all: [Verb] { allCases }

	static func named(_ name: String) -> Verb? {
		Verb(rawValue: name)
	}

	/// The usage line: the name, the options the verb cannot run without, the arguments, then its other options.
	var usage: String {
		let options = declaration.options
		return "defaults \(name) " + options.filter(\.isRequired).map { "\($0.usage) " }.joined()
			+ declaration.synopsis + options.filter { !$0.isRequired }.map { " [\($0.usage)]" }.joined()
	}

	/// Parses the verb's arguments (the command line after its name) and runs it.
	func run(_ tokens: [String], isJSON: Bool) throws(ToolError) -> ExitStatus {
		var arguments = try VerbArguments(tokens, for: self, isJSON: isJSON)
		return try declaration.run(&arguments)
	}
}

extension Verb {
	/// A verb's arguments, help and action, declared in one place: the file of the verb.
	struct Declaration: Sendable {
		/// The positional arguments, as the usage line shows them: `<domain> <key>`.
		let synopsis: String
		/// One line for the overview.
		let summary: String
		/// The help that `defaults help <verb>` prints after the usage line; the options' help follows it.
		let details: String
		/// The options the verb takes after its name, besides `--json` and `-app`, which every verb takes.
		var options: [OptionSpec] = []
		/// For a verb whose values may look like flags (`write`): how many positional arguments come before them.
		/// Options are recognised only until the domain is known; the tokens after these arguments are left, as
		/// they are, in ``VerbArguments/values``. `nil`: every token is parsed.
		var valuesAfter: Int?
		let run: @Sendable (inout VerbArguments) throws(ToolError) -> ExitStatus
	}
}
