/// Finds the verb of a command line and runs it, turning failures into messages and exit statuses.
package enum Tool {
	/// Runs the command line `tokens` (without the executable) as the `defaults` program does: failures of the
	/// package are collected for the messages, and the exit status is returned.
	package static func main(_ tokens: [String]) -> ExitStatus {
		FailureLog.shared.install()
		ChangeGuard.install()
		defer { ChangeGuard.end() }
		return run(tokens)
	}

	static func run(_ tokens: [String]) -> ExitStatus {
		do {
			return try dispatch(tokens)
		} catch {
			Output.error(error.message)
			if let verb = error.usageOf.flatMap(Verb.named) {
				Output.errorText("usage: \(verb.usage)\n")
			} else if error.status == .usage {
				Output.errorText("Run \"defaults --help\" for the verbs and their options.\n")
			}
			return error.status
		}
	}

	private static func dispatch(_ tokens: [String]) throws(ToolError) -> ExitStatus {
		let invocation = try Invocation(parsing: tokens)
		guard let name = invocation.verb else {
			if invocation.wantsHelp {
				Output.line(Help.overview)
				return .success
			}
			Output.errorText(Help.overview + "\n")
			return .usage
		}
		if name == "help" {
			return try help(invocation.arguments)
		}
		guard let verb = Verb.named(name) else {
			throw .usage("Unknown verb \"\(name)\".", verb: nil)
		}
		// Help anywhere before `--` prints help and does nothing else: `defaults delete app -h` must not delete.
		if invocation.wantsHelp || invocation.arguments.prefix(while: { $0 != "--" }).contains(where: Invocation.isHelp)
		{
			Output.line(Help.page(for: verb))
			return .success
		}
		return try verb.run(invocation.arguments, isJSON: invocation.isJSON)
	}

	/// `defaults help [<verb>]`.
	private static func help(_ arguments: [String]) throws(ToolError) -> ExitStatus {
		guard let name = arguments.first else {
			Output.line(Help.overview)
			return .success
		}
		guard arguments.count == 1 else {
			throw .usage("help takes at most one verb.", verb: nil)
		}
		guard let verb = Verb.named(name) else {
			throw .usage("Unknown verb \"\(name)\".", verb: nil)
		}
		Output.line(Help.page(for: verb))
		return .success
	}
}
