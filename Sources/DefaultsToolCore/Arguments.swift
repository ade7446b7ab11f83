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
			// As the help shows them, before the verb; the verb's arguments take them like any of their options
			// (`-schema` is refused there by a verb that reads no schema).
			case OptionSpec.app.name, OptionSpec.schema.name:
				guard index < tokens.endIndex else {
					throw .usage("\(token) needs a value.", verb: nil)
				}
				arguments += [token, tokens[index]]
				index += 1
			// Like `-app`, handed to the verb, which refuses it unless it writes the system layer.
			case OptionSpec.system.name:
				arguments.append(token)
			case _ where token.hasPrefix("-") && token != "-":
				throw .usage("Unknown option \"\(token)\".", verb: nil)
			default:
				verb = token
				arguments += tokens[index...]
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

/// An option a verb takes after its name: how it is typed, and its line in the verb's help.
struct OptionSpec: Sendable {
	let name: String
	/// What the value stands for, as the usage shows it (`n` for `--count <n>`); `nil` for a flag.
	var valueName: String?
	/// The option's help; lines after the first are indented under it.
	var help = ""
	/// Whether the verb runs only with it (`lock` and `unlock` with `-system`): the usage line then shows it
	/// unbracketed, before the verb's arguments.
	var isRequired = false

	var takesValue: Bool { valueName != nil }

	/// The option as a verb that cannot run without it declares it.
	var required: OptionSpec {
		var required = self
		required.isRequired = true
		return required
	}

	/// The option as the usage line shows it: `--count <n>`.
	var usage: String {
		valueName.map { "\(name) <\($0)>" } ?? name
	}

	/// `--json`, which every verb takes, as if it came before the verb.
	static let json = OptionSpec(name: "--json")
	/// `-app <path>`, which every verb takes: the domain is that file.
	static let app = OptionSpec(name: "-app", valueName: "path")
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
	/// The tokens after the leading arguments of a verb that reads its values itself
	/// (``Verb/Declaration/valuesAfter``).
	var values: [String] = []
	/// `--json` came before the verb or among its arguments.
	var isJSON: Bool

	/// Parses `tokens` for `verb`, with the options it declares.
	init(_ tokens: [String], for verb: Verb, isJSON: Bool = false) throws(ToolError) {
		let valuesAfter = verb.declaration.valuesAfter
		let specs = verb.declaration.options + [.json, .app]
		self.verb = verb.name
		self.isJSON = isJSON
		var index = tokens.startIndex
		var isPositionalOnly = false
		while index < tokens.endIndex {
			// `-app <path>` stands for the domain, the first positional argument.
			let argumentCount = positionals.count + (has(OptionSpec.app.name) ? 1 : 0)
			if let valuesAfter, argumentCount >= valuesAfter {
				values = Array(tokens[index...])
				break
			}
			let token = tokens[index]
			index += 1
			// A verb that reads its own values takes options only before its domain: its key may look like a flag.
			let isOption = token.hasPrefix("-") && token != "-" && (valuesAfter == nil || argumentCount == 0)
			if isPositionalOnly || !isOption {
				positionals.append(token)
				continue
			}
			if token == "--" {
				isPositionalOnly = true
				continue
			}
			guard let spec = specs.first(where: { $0.name == token }) else {
				throw .usage("Unknown option \"\(token)\" for \(verb.name).", verb: verb.name)
			}
			if spec.takesValue {
				guard index < tokens.endIndex else {
					throw .usage("\(token) needs a value.", verb: verb.name)
				}
				options[token] = tokens[index]
				index += 1
			} else {
				options[token] = ""
			}
		}
		if has(OptionSpec.json.name) {
			self.isJSON = true
		}
	}

	/// Whether the flag `name` was given.
	func has(_ name: String) -> Bool {
		options[name] != nil
	}

	/// Takes the domain: `-app <path>` if it was given, else the first positional argument.
	mutating func takeDomain() throws(ToolError) -> DomainReference {
		if let path = options[OptionSpec.app.name] {
			return .file(path)
		}
		guard !positionals.isEmpty else {
			throw .usage("Missing domain.", verb: verb)
		}
		return DomainReference(argument: positionals.removeFirst())
	}

	/// Takes the domain and finds its file.
	mutating func takeDomainFile() throws(ToolError) -> Domain {
		try Domain(takeDomain(), verb: verb)
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
