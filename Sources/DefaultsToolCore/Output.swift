import Foundation

/// Standard output and standard error, written unbuffered so that lines reach a pipe as soon as they are printed.
enum Output {
	/// Writes `text` and a newline to standard output.
	static func line(_ text: String) {
		FileHandle.standardOutput.write(Data((text + "\n").utf8))
	}

	/// Writes `data` to standard output as it is.
	static func raw(_ data: Data) {
		FileHandle.standardOutput.write(data)
	}

	/// Writes `message` to standard error, prefixed with the command's name.
	static func error(_ message: String) {
		FileHandle.standardError.write(Data("defaults: \(message)\n".utf8))
	}

	/// Writes `text` to standard error as it is.
	static func errorText(_ text: String) {
		FileHandle.standardError.write(Data(text.utf8))
	}
}
