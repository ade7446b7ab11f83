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

	/// Runs the command line as the system handed it over, as bytes: Swift's `CommandLine.arguments` turns bytes
	/// that are not UTF-8 into U+FFFD, so `k\xfe` and `k\xff` would name one key and `./other\xfe.plist` another file.
	/// Such an argument is refused before anything is read or written.
	///
	/// - Parameter arguments: the arguments without the executable, each as its bytes without the trailing NUL.
	package static func main(bytes arguments: [[UInt8]]) -> ExitStatus {
		var tokens: [String] = []
		for (index, bytes) in arguments.enumerated() {
			guard let token = String(validating: bytes, as: UTF8.self) else {
				Output.error(
					"Argument \(index + 1), \(escaped(bytes)), is not valid UTF-8; keys, domains and paths must be, "
						+ "since a byte that is not would be read as U+FFFD and name another key or file. Nothing was "
						+ "changed.")
				Output.errorText("Run \"defaults --help\" for the verbs and their options.\n")
				return .usage
			}
			tokens.append(token)
		}
		return main(tokens)
	}

	/// `bytes` in quotes, the bytes that are not printable ASCII written as `\xNN`.
	private static func escaped(_ bytes: [UInt8]) -> String {
		let shown = bytes.map { byte in
			(0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "\\")
				? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16, uppercase: false).leftPadded(to: 2)
		}
		return "\"" + shown.joined() + "\""
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

extension String {
	fileprivate func leftPadded(to width: Int) -> String {
		String(repeating: "0", count: max(0, width - count)) + self
	}
}
