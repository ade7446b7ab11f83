/// What every verb is handed besides its arguments.
struct Context {
	/// `--json` came before the verb.
	var isJSON: Bool
}

/// A verb of the command: its name, its help, and what it does.
struct Verb: Sendable {
	let name: String
	/// The arguments, as the usage line shows them: `<domain> <key>`.
	let synopsis: String
	/// One line for the overview.
	let summary: String
	/// The help that `defaults help <verb>` prints after the usage line.
	let details: String
	let run: @Sendable (Context, [String]) throws(ToolError) -> ExitStatus

	var usage: String { "defaults \(name) \(synopsis)" }

	/// Every verb, in the order the overview lists them.
	static let all: [Verb] = [
		.read, .readType, .write, .delete, .rename, .domains, .find, .exportDomain, .importDomain, .watch, .snapshot,
		.verify,
	]

	static func named(_ name: String) -> Verb? {
		all.first { $0.name == name }
	}
}

extension VerbArguments {
	/// Parses `tokens` for `verb`; `--json` among them counts as if it came before the verb.
	init(_ tokens: [String], verb: String, context: inout Context, options: [OptionSpec] = []) throws(ToolError) {
		try self.init(tokens, verb: verb, options: options + [.json])
		if has("--json") {
			context.isJSON = true
		}
	}
}
