import Foundation

// `defaults`: the macOS command's verbs and flags for the settings files of the Linux file store.

FailureLog.shared.install()
exit(Tool.run(Array(CommandLine.arguments.dropFirst())).rawValue)
