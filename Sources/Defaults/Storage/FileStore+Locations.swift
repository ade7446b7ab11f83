import Foundation

// Where settings files live, and the launch-argument domain (`-name value`) that overrides them.
extension Defaults.FileStore {
	/// `$XDG_CONFIG_HOME` if set to an absolute path, else `$HOME/.config`: where Foundation keeps defaults on Linux.
	static func configurationDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
		if let configuration = environment["XDG_CONFIG_HOME"], configuration.hasPrefix("/") {
			return URL(filePath: configuration, directoryHint: .isDirectory)
		}
		// Foundation's defaults follow `$HOME`, unlike `NSHomeDirectory()`, which reads the password database.
		let home =
			environment["HOME"].flatMap { $0.isEmpty ? nil : URL(filePath: $0, directoryHint: .isDirectory) }
			?? URL(filePath: NSHomeDirectory(), directoryHint: .isDirectory)
		return home.appending(path: ".config", directoryHint: .isDirectory)
	}

	/// The file of ``standard``, named as Foundation names the standard domain.
	static var standardURL: URL {
		let name = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
		return configurationDirectory().appending(path: name + ".plist", directoryHint: .notDirectory)
	}

	/// The `-key value` pairs of `arguments` (the first is the executable and is skipped).
	///
	/// A value is read as a property list in text form (`"(a, b)"`, `"{ a = 1; }"`, XML); anything else, such as a
	/// bare word or a number, is a string, as with `UserDefaults`.
	static func argumentDomain(from arguments: [String]) -> [String: Any] {
		var domain: [String: Any] = [:]
		var index = arguments.index(after: arguments.startIndex)
		while index < arguments.endIndex {
			let argument = arguments[index]
			let valueIndex = arguments.index(after: index)
			guard argument.count > 1, argument.hasPrefix("-"), !argument.hasPrefix("--"),
				valueIndex < arguments.endIndex
			else {
				index = valueIndex
				continue
			}
			domain[String(argument.dropFirst())] = argumentValue(arguments[valueIndex])
			index = arguments.index(after: valueIndex)
		}
		return domain
	}

	private static func argumentValue(_ text: String) -> Any {
		(try? PropertyListFile.decodeValue(Data(text.utf8))) ?? text
	}
}
