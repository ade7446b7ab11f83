import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

// Where settings files live, and the launch-argument domain (`-name value`) that overrides them.
extension Defaults.FileStore {
	/// `$XDG_CONFIG_HOME` if set to an absolute path, else `$HOME/.config`: where Foundation keeps defaults on Linux.
	///
	/// A `XDG_CONFIG_HOME` that is not UTF-8 is not used: Foundation reads its bad bytes as U+FFFD, which names
	/// another folder beside the one meant. `$HOME/.config` is used instead and a ``Defaults/Failure`` says so.
	static func configurationDirectory(
		environment: [String: String] = ProcessInfo.processInfo.environment,
		isConfigurationHomeUTF8: Bool = isEnvironmentValueUTF8("XDG_CONFIG_HOME")
	) -> URL {
		if let configuration = environment["XDG_CONFIG_HOME"], configuration.hasPrefix("/") {
			if isConfigurationHomeUTF8 {
				return URL(filePath: configuration, directoryHint: .isDirectory)
			}
			reportConfigurationHomeNotUTF8()
		}
		// Foundation's defaults follow `$HOME`, unlike `NSHomeDirectory()`, which reads the password database.
		let home =
			environment["HOME"].flatMap { $0.isEmpty ? nil : URL(filePath: $0, directoryHint: .isDirectory) }
			?? URL(filePath: NSHomeDirectory(), directoryHint: .isDirectory)
		return home.appending(path: ".config", directoryHint: .isDirectory)
	}

	/// Whether the environment variable `name` is unset or valid UTF-8, judged on its bytes.
	static func isEnvironmentValueUTF8(_ name: String) -> Bool {
		guard let value = getenv(name) else {
			return true
		}
		return String(validatingCString: value) != nil
	}

	private static let hasReportedConfigurationHome = LockedState(false)

	private static func reportConfigurationHomeNotUTF8() {
		let isFirst = hasReportedConfigurationHome.withLock { reported in
			defer { reported = true }
			return !reported
		}
		guard isFirst else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: "", reason: .storage,
				message:
					"XDG_CONFIG_HOME is not valid UTF-8, so the folder it names cannot be told from a folder named "
					+ "with U+FFFD in its place; settings are kept in $HOME/.config instead."))
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

	/// What the text of a launch argument or an environment variable stands for: a property list in text form, else
	/// the text itself (which a number or Boolean key reads as `UserDefaults` does, see `Key.decode`).
	static func argumentValue(_ text: String) -> Any {
		(try? PropertyListFile.decodeValue(Data(text.utf8))) ?? text
	}
}
