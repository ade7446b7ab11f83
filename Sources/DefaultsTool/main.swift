import DefaultsToolCore
import Foundation

// `defaults`: the macOS command's verbs and flags for the settings files of the Linux file store. Everything it does
// lives in DefaultsToolCore; this is only the entry point.

// The arguments' bytes, not `CommandLine.arguments`, which replaces bytes that are not UTF-8 with U+FFFD.
let arguments = (0..<Int(CommandLine.argc)).dropFirst().map { index in
	CommandLine.unsafeArgv[index].map {
		Array(UnsafeBufferPointer(start: $0, count: strlen($0))).map(UInt8.init(bitPattern:))
	} ?? []
}
exit(Tool.main(bytes: arguments).rawValue)
