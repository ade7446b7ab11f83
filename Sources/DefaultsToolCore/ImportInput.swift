import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// What `defaults import` reads: a file or standard input, never more than ``limit`` bytes, so that `yes |` or a
/// link to `/dev/zero` ends with an error instead of taking all the memory there is.
enum ImportInput {
	/// 64 MiB: far above any settings file (a 10,000-key file is a few hundred KB).
	static let limit = 64 << 20

	/// The bytes at `source`, a path or `-` for standard input.
	static func bytes(from source: String) throws(ToolError) -> Data {
		let name = source == "-" ? "Standard input" : source
		guard source != "-" else {
			return try readAll(STDIN_FILENO, name: name)
		}
		let descriptor = open(source, O_RDONLY | O_CLOEXEC)
		guard descriptor >= 0 else {
			let reason = String(cString: strerror(errno))
			throw ToolError("\(source) cannot be read: \(reason).", status: .noInput)
		}
		defer { close(descriptor) }
		return try readAll(descriptor, name: name)
	}

	private static func readAll(_ descriptor: Int32, name: String) throws(ToolError) -> Data {
		var data = Data()
		var chunk = [UInt8](repeating: 0, count: 64 * 1024)
		while true {
			let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
			if count < 0 {
				guard errno == EINTR else {
					let reason = String(cString: strerror(errno))
					throw ToolError("\(name) cannot be read: \(reason).", status: .noInput)
				}
				continue
			}
			if count == 0 {
				return data
			}
			data.append(contentsOf: chunk[..<count])
			if data.count > limit {
				throw .badValue(
					"\(name) is larger than \(limit >> 20) MiB, the most import reads; nothing was imported.")
			}
		}
	}
}
