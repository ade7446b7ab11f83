/// The help texts: the overview, and one page per verb.
enum Help {
	static var overview: String {
		let width = Verb.all.map { $0.name.count }.max() ?? 0
		let verbs = Verb.all.map { verb in
			"  " + verb.name + String(repeating: " ", count: width - verb.name.count + 2) + verb.declaration.summary
		}
		return """
			usage: defaults [--json] [-app <path>] [-system] [-schema <path>] <verb> [<arguments>]

			Reads, writes and watches the settings files of programs that use Defaults or Foundation's
			UserDefaults on Linux, with the verbs and flags of the macOS command.

			A domain is a store name: the file <name>.plist in $XDG_CONFIG_HOME, else ~/.config. An argument
			with "/" or ending in ".plist", or -app <path>, names a file instead. Writes go through the file
			store: the file is replaced atomically, and programs using it see the change.

			A domain reads as the app reads it: values an administrator locked (<name>.locks.plist) above the
			user's values, above system-wide defaults (<name>.plist), both in the folders of $XDG_CONFIG_DIRS,
			else /etc/xdg. Writes change the user's values only, and a locked key is refused (77); root writes
			the system layer with -system. "defaults read -source <domain>" shows where each value comes from.

			Verbs:
			\(verbs.joined(separator: "\n"))

			Options:
			  --json          print JSON (read, read-type, domains, find, watch, verify)
			  -app <path>     the domain is the settings file at <path>
			  -system         as root, write the system layer instead (write, delete, lock, unlock)
			  -schema <path>  the app's schema is that file, not <name>.schema.plist beside the settings
			                  file (write, lock, keys)
			  --help, -h      this help; "defaults help <verb>" or "defaults <verb> --help" for a verb

			\(exitStatuses)
			"""
	}

	static let exitStatuses = """
		Exit status:
		  0   success
		  1   the domain or key does not exist, find found nothing, verify found differences,
		      watch --count timed out first
		  64  usage error: unknown verb or option, missing or extra argument
		  65  a value that does not parse as its type, a corrupt settings file (it is left untouched),
		      input that is not a property list with a dictionary at the top
		  66  an input file that cannot be read, a schema named by -schema among them
		  73  an output file that cannot be written
		  74  a settings file that cannot be written; -system run by anyone but root
		  77  a write of a key an administrator locked (nothing is written)
		"""

	static func page(for verb: Verb) -> String {
		"usage: \(verb.usage)\n\n\(verb.declaration.details)\(optionLines(verb.declaration.options))\n\n\(exitStatuses)"
	}

	/// A verb's options, one a line after two spaces, their help aligned in a column; empty when it has none.
	private static func optionLines(_ options: [OptionSpec]) -> String {
		let width = (options.map(\.usage.count).max() ?? 0) + 2
		return options.map { option in
			let help = option.help.split(separator: "\n", omittingEmptySubsequences: false)
				.joined(separator: "\n" + String(repeating: " ", count: width + 2))
			return "\n  " + option.usage + String(repeating: " ", count: width - option.usage.count) + help
		}.joined()
	}
}
