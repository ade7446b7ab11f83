import DefaultsToolCore
import Foundation

// `defaults`: the macOS command's verbs and flags for the settings files of the Linux file store. Everything it does
// lives in DefaultsToolCore; this is only the entry point.

exit(Tool.main(Array(CommandLine.arguments.dropFirst())).rawValue)
