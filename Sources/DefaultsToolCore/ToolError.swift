/// The exit statuses of `defaults`, after `sysexits.h` where one fits.
package enum ExitStatus: Int32 {
	case success = 0
	/// A domain, key or match that does not exist; a snapshot that does not match.
	case notFound = 1
	/// EX_USAGE: an unknown verb or flag, a missing or extra argument.
	case usage = 64
	/// EX_DATAERR: a value that does not parse as its type, a corrupt settings file, input that is not a property list.
	case dataError = 65
	/// EX_NOINPUT: an input file that does not exist or cannot be read.
	case noInput = 66
	/// EX_CANTCREAT: an output file that cannot be written.
	case cannotCreate = 73
	/// EX_IOERR: a settings file that could not be written.
	case ioError = 74
	/// EX_NOPERM: a write of a key an administrator locked (`<name>.locks.plist`); nothing was written.
	case locked = 77
}

/// A failure that ends the command: a message for standard error and the exit status.
struct ToolError: Error {
	let message: String
	let status: ExitStatus
	/// The verb whose usage line follows the message, for usage errors.
	var usageOf: String?

	init(_ message: String, status: ExitStatus, usageOf: String? = nil) {
		self.message = message
		self.status = status
		self.usageOf = usageOf
	}

	static func usage(_ message: String, verb: String?) -> ToolError {
		ToolError(message, status: .usage, usageOf: verb)
	}

	static func badValue(_ message: String) -> ToolError {
		ToolError(message, status: .dataError)
	}

	static func notFound(_ message: String) -> ToolError {
		ToolError(message, status: .notFound)
	}
}
