/// The command line split into the verb and its arguments, with the options that come before the verb taken out.
struct Invocation {
	var verb: String?
	var arguments: [String]
	var isJSON = false
	var wantsHelp = false

	/// Splits `tokens` (the command line without the executable).
	init(parsing tokens: [String]) throws(ToolError) {
		var index = tokens.startIndex
		verb = nil
		arguments = []
		while index < tokens.endIndex {
			let token = tokens[index]
			index += 1
			switch token {
			case "--json": isJSON = true
			case _ where Self.isHelp(token): wantsHelp = true
			case _ where token.hasPrefix("-") && token != "-":
				throw .usage("Unknown option \"\(token)\".", verb: nil)
			default:
				verb = token
				arguments = Array(tokens[index...])
				return
			}
		}
	}
}

extension Invocation {
	/// Whether `token` asks for help: `--help`, `-help` or `-h`.
	static func isHelp(_ token: String) -> Bool {
		token == "--help" || token == "-h" || token == "-help"
	}
}

/// An option a verb takes after its name.
struct OptionSpec {
	let name: String
	let takesValue: Bool

	static let json = OptionSpec(name: "--json", takesValue: false)
	static let count = OptionSpec(name: "--count", takesValue: true)
	static let timeout = OptionSpec(name: "--timeout", takesValue: true)
}

/// A verb's arguments: its positional arguments in order, and its options.
///
/// Options may come anywhere; `--` ends them, and `-` alone is a positional argument (standard input or output).
/// `-app <path>` names the domain by its file, for every verb. Help flags never reach here: the dispatcher answers
/// them before any verb runs.
struct VerbArguments {
	let verb: String
	var positionals: [String] = []
	var options: [String: String] = [:]

	init(_ tokens: [String], verb: String, options specs: [OptionSpec]) throws(ToolError) {
		self.verb = verb
		let specs = specs + [OptionSpec(name: "-app", takesValue: true)]
		var index = tokens.startIndex
		var isPositionalOnly = false
		while index < tokens.endIndex {
			let token = tokens[index]
			index += 1
			if isPositionalOnly || token == "-" || !token.hasPrefix("-") {
				positionals.append(token)
				continue
			}
			if token == "--" {
				isPositionalOnly = true
				continue
			}
			guard let spec = specs.first(where: { $0.name == token }) else {
				throw .usage("Unknown option \"\(token)\" for \(verb).", verb: verb)
			}
			if spec.takesValue {
				guard index < tokens.endIndex else {
					throw .usage("\(token) needs a value.", verb: verb)
				}
				options[token] = tokens[index]
				index += 1
			} else {
				options[token] = ""
			}
		}
	}

	/// Whether the flag `name` was given.
	func has(_ name: String) -> Bool {
		options[name] != nil
	}

	/// Takes the domain: `-app <path>` if it was given, else the first positional argument.
	mutating func takeDomain() throws(ToolError) -> DomainReference {
		if let path = options["-app"] {
			return .file(path)
		}
		guard !positionals.isEmpty else {
			throw .usage("Missing domain.", verb: verb)
		}
		return DomainReference(argument: positionals.removeFirst())
	}

	/// Takes the next positional argument, `what` naming it in the error when it is missing.
	mutating func take(_ what: String) throws(ToolError) -> String {
		guard !positionals.isEmpty else {
			throw .usage("Missing \(what).", verb: verb)
		}
		return positionals.removeFirst()
	}

	/// Takes the next positional argument if there is one.
	mutating func takeIfPresent() -> String? {
		positionals.isEmpty ? nil : positionals.removeFirst()
	}

	/// Refuses positional arguments that no one took.
	func finish() throws(ToolError) {
		if let extra = positionals.first {
			throw .usage("Unexpected argument \"\(extra)\".", verb: verb)
		}
	}

	/// The value of option `name` as a number, `nil` when it was not given.
	func number(_ name: String) throws(ToolError) -> Double? {
		guard let text = options[name] else {
			return nil
		}
		guard let value = Double(text), value.isFinite, value >= 0 else {
			throw .usage("\(name) needs a non-negative number, not \"\(text)\".", verb: verb)
		}
		return value
	}
}
