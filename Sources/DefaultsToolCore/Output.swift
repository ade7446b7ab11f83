import Defaults
import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// Standard output and standard error, written unbuffered so that lines reach a pipe as soon as they are printed.
///
/// Written with `write(2)` rather than `FileHandle.write(_:)`, which traps when the descriptor is closed or the pipe
/// is broken (with SIGPIPE ignored). When standard output cannot take what the command prints, the command ends at
/// once with ``ExitStatus/ioError`` and no message: whoever was reading has gone, and what was changed on disk was
/// already written. Standard error that cannot be written is ignored.
enum Output {
	/// Writes `text` and a newline to standard output.
	static func line(_ text: String) {
		raw(Data((text + "\n").utf8))
	}

	/// Writes `data` to standard output as it is.
	static func raw(_ data: Data) {
		guard data.withUnsafeBytes({ writeAll($0, to: STDOUT_FILENO) }) else {
			exit(ExitStatus.ioError.rawValue)
		}
	}

	/// Writes `message` to standard error, prefixed with the command's name.
	static func error(_ message: String) {
		errorText("defaults: \(message)\n")
	}

	/// Writes `text` to standard error as it is.
	static func errorText(_ text: String) {
		_ = Array(text.utf8).withUnsafeBytes { writeAll($0, to: STDERR_FILENO) }
	}
}
