import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// The journal of changes beside a settings file (`<name>.plist.sync.intents`): one line per key a flush or an
/// update of any process wrote on purpose, appended under the settings file's lock before the file changes, so that
/// whoever keeps the file in step with a remote (sync) knows which values a program set, and which it only received
/// or found. It exists only once that layer made it: a flush appends to a journal that is there, and makes none.
///
/// A line is JSON, `{"k":"volume","p":4711,"s":812}`: a sequence strictly increasing in the file, the key's name, and
/// the writer's process id (for people reading it). A line with no name only carries the sequence on, after the
/// journal was emptied. A last line without its newline is an append a crash cut short, and is ignored.
package struct ChangeJournal: Sendable {
	package struct Line: Codable, Equatable, Sendable {
		package var s: Int
		package var k: String?
		package var p: Int32?

		package init(s: Int, k: String?, p: Int32?) {
			self.s = s
			self.k = k
			self.p = p
		}
	}

	package let file: SettingsFile

	/// The journal beside the settings file `settingsFile`.
	package init(besideSettingsFile settingsFile: SettingsFile) {
		file = SettingsFile(besideFileAt: URL(filePath: settingsFile.path + ".sync.intents"))
	}

	/// What reading the journal found.
	package enum Contents {
		case missing
		case lines([Line])
		case refused(String)
	}

	/// Reads the journal a chunk at a time, however long it grew (a line of more than
	/// ``SettingsFile/maximumByteCount`` bytes is refused).
	///
	/// - Parameter latestOnly: keep only the last line of each name, and the last line: all a reader of pending
	///   changes needs (the highest sequence of each name, and the highest issued), in memory that grows with the
	///   names rather than the lines.
	package func read(latestOnly: Bool = false) -> Contents {
		readCounting(latestOnly: latestOnly).contents
	}

	/// As ``read(latestOnly:)``, with the bytes read: the journal's size as this read saw it (0 when it was not read),
	/// so that a reader who then asks whether it holds more than some lines (``holdsMore(than:byteCount:)``) need not
	/// open it again.
	package func readCounting(latestOnly: Bool) -> (contents: Contents, byteCount: Int) {
		switch file.withBesideFileOpened({ Self.lines(from: $0, latestOnly: latestOnly) }) {
		case .missing:
			return (.missing, 0)
		case .refused(let reason):
			return (.refused(reason), 0)
		case .opened(let read):
			return read
		}
	}

	private static func lines(from descriptor: Int32, latestOnly: Bool) -> (contents: Contents, byteCount: Int) {
		var byteCount = 0
		var lines: [Line] = []
		var latest: [String: Line] = [:]
		var last: Line?
		var buffer: [UInt8] = []
		var chunk = [UInt8](repeating: 0, count: 1 << 20)
		while true {
			let count = chunk.withUnsafeMutableBytes { readSome(descriptor, $0) }
			if count < 0 {
				if errno == EINTR {
					continue
				}
				return (.refused(reason(errno)), byteCount)
			}
			if count == 0 {
				break
			}
			byteCount += count
			let scanned = buffer.count
			buffer.append(contentsOf: chunk[..<count])
			var start = 0
			// The bytes before `scanned` are a line's start that has no newline.
			while let end = Self.index(of: UInt8(ascii: "\n"), in: buffer, from: max(start, scanned)) {
				if let line = parse(buffer[start..<end]) {
					if latestOnly {
						if let name = line.k {
							latest[name] = line
						}
						last = line
					} else {
						lines.append(line)
					}
				}
				start = end + 1
			}
			buffer.removeSubrange(0..<start)
			guard buffer.count <= SettingsFile.maximumByteCount else {
				return (.refused("it holds a line of more than \(SettingsFile.maximumByteCount >> 20) MiB"), byteCount)
			}
		}
		guard latestOnly else {
			return (.lines(lines), byteCount)
		}
		if let last, last.k == nil {
			lines.append(last)
		}
		lines.append(contentsOf: latest.values)
		return (.lines(lines.sorted { $0.s < $1.s }), byteCount)
	}

	/// The first index of `byte` in `bytes` from `start` on, by `memchr` (a long journal has many bytes to search).
	static func index(of byte: UInt8, in bytes: [UInt8], from start: Int) -> Int? {
		bytes.withUnsafeBytes { raw in
			guard start < raw.count, let base = raw.baseAddress,
				let found = memchr(base + start, Int32(byte), raw.count - start)
			else {
				return nil
			}
			return base.distance(to: UnsafeRawPointer(found))
		}
	}

	/// The line in `bytes` (without its newline), or `nil` when they are not one. The form the journal's writers
	/// give (`{"k":"name","p":1,"s":2}`, keys sorted, no space, a name without escapes) is read directly, since a long
	/// journal has millions of lines; any other goes through `JSONDecoder`. Both take exactly what JSON takes: the
	/// direct reading leaves to the decoder a name with a control byte (a NUL among them) and a number with a leading
	/// zero, which the decoder refuses (`ChangeJournalRandomTests`).
	static func parse(_ bytes: ArraySlice<UInt8>) -> Line? {
		if let line = parseWrittenForm(bytes) {
			return line
		}
		return try? JSONDecoder().decode(Line.self, from: Data(bytes))
	}

	private static func parseWrittenForm(_ bytes: ArraySlice<UInt8>) -> Line? {
		var index = bytes.startIndex
		func take(_ expected: String) -> Bool {
			for byte in expected.utf8 {
				guard index < bytes.endIndex, bytes[index] == byte else {
					return false
				}
				index += 1
			}
			return true
		}
		func integer() -> Int? {
			let start = index
			if index < bytes.endIndex, bytes[index] == UInt8(ascii: "-") {
				index += 1
			}
			let digits = index
			while index < bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
				index += 1
			}
			// JSON has no leading zero.
			guard index - digits < 2 || bytes[digits] != UInt8(ascii: "0") else {
				return nil
			}
			return Int(String(decoding: bytes[start..<index], as: UTF8.self))
		}
		guard take("{") else {
			return nil
		}
		var name: String?
		var pid: Int32?
		if take(#""k":""#) {
			let start = index
			// To the closing quote; a name with an escape (a backslash) or a control byte (JSON has none unescaped)
			// takes the decoder's way.
			let found = bytes.withUnsafeBytes { raw -> (quote: Int, isEscaped: Bool)? in
				let offset = start - bytes.startIndex
				guard offset < raw.count, let base = raw.baseAddress,
					let quote = memchr(base + offset, 0x22, raw.count - offset)
				else {
					return nil
				}
				let length = (base + offset).distance(to: UnsafeRawPointer(quote))
				let name = UnsafeRawBufferPointer(start: base + offset, count: length)
				return (start + length, memchr(base + offset, 0x5C, length) != nil || name.contains { $0 < 0x20 })
			}
			guard let found, !found.isEscaped else {
				return nil
			}
			index = found.quote + 1
			guard take(","), let decoded = String(validating: bytes[start..<found.quote], as: UTF8.self) else {
				return nil
			}
			name = decoded
		}
		if take(#""p":"#) {
			guard let value = integer(), let value32 = Int32(exactly: value), take(",") else {
				return nil
			}
			pid = value32
		}
		guard take(#""s":"#), let sequence = integer(), take("}"), index == bytes.endIndex else {
			return nil
		}
		return Line(s: sequence, k: name, p: pid)
	}

	/// Appends a line for each of `names`, in order, after the journal's last sequence, and syncs them to the disk;
	/// the caller holds the settings file's lock. Nothing when the journal does not exist. A `nil` name only takes
	/// a sequence (its reader's own use of one); `reserving` more are skipped before the first line, so that it
	/// takes them all. Only the journal's end is read, for its last sequence; an append that cannot find it fails
	/// rather than start the sequences again (lines at or below a key's settled sequence would never be pushed).
	///
	/// - Returns: the lines appended (empty when there is no journal), or why they could not be, as a sentence.
	package func append(_ names: [String?], reserving: Int = 0) -> Result<[Line], AppendFailure> {
		append(count: names.count, reserving: reserving) { names }
	}

	/// Appends a line for each of `names`, in the order of the names, as ``append(_:reserving:)`` does; the names
	/// are sorted only once the journal is found open (a flush of a store without one sorts nothing).
	func append(sorting names: Set<String>) -> Result<[Line], AppendFailure> {
		append(count: names.count, reserving: 0) { names.sorted() }
	}

	/// `names` gives the `count` names once the journal is open.
	private func append(
		count: Int, reserving: Int, names: () -> [String?]
	) -> Result<[Line], AppendFailure> {
		guard count > 0 else {
			return .success([])
		}
		if let sentence = file.changeRefusal() {
			return .failure(AppendFailure(sentence))
		}
		if let reason = file.refusal(for: .read) {
			return .failure(AppendFailure("The journal \(file.path) is left alone: \(reason)."))
		}
		let (anchor, anchorRefusal) = FolderAnchor.opened(for: file)
		guard let anchor else {
			return .failure(AppendFailure(anchorRefusal ?? "The folder of \(file.path) could not be opened."))
		}
		defer { anchor.release() }
		let descriptor = movedAboveStandardStreams(
			openat(
				anchor.descriptor, anchor.name(file.fileName), O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
			))
		guard descriptor >= 0 else {
			if errno == ENOENT {
				return .success([])
			}
			return .failure(AppendFailure("The journal \(file.path) could not be opened: \(Self.reason(errno))."))
		}
		defer { close(descriptor) }
		var status = stat()
		guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
			FileOwnership.plantedReason(status, in: anchor) == nil
		else {
			return .failure(AppendFailure("The journal \(file.path) is not a regular file of its owner."))
		}
		let end: End
		switch Self.end(of: descriptor, size: Int(status.st_size)) {
		case .success(let found):
			end = found
		case .failure(let reason):
			return .failure(
				AppendFailure(
					"The last sequence of the journal \(file.path) could not be read (\(reason)), so no line was added to it."
				))
		}
		var sequence = end.sequence + reserving
		let pid = getpid()
		let encoder = JSONEncoder()
		encoder.outputFormatting = .sortedKeys
		var appended: [Line] = []
		// A line a crash cut short ends here, so that the first new line starts a line of its own.
		var data = end.endsALine ? Data() : Data("\n".utf8)
		for name in names() {
			sequence += 1
			let line = Line(s: sequence, k: name, p: pid)
			guard let encoded = try? encoder.encode(line) else {
				continue
			}
			data.append(encoded)
			data.append(UInt8(ascii: "\n"))
			appended.append(line)
		}
		guard data.withUnsafeBytes({ writeAll($0, to: descriptor) }), fdatasync(descriptor) == 0 else {
			return .failure(AppendFailure("The journal \(file.path) could not be written: \(Self.reason(errno))."))
		}
		return .success(appended)
	}

	/// What the end of the journal says: the sequence of its last complete line that parses (0 when none does), and
	/// whether its last byte ends a line (an empty journal does).
	struct End: Equatable {
		var sequence: Int
		var endsALine: Bool
	}

	/// Reads the journal of `size` bytes at `descriptor` from its end: a window of a few KiB, widened until it holds
	/// a complete line that parses (a long key name makes a long line) or the journal's start. A last line without
	/// its newline is an append a crash cut short, and lines that do not parse are passed over, as ``read(latestOnly:)``
	/// passes them over.
	///
	/// - Returns: the end, or why it could not be read: the system refused, or the last
	///   ``SettingsFile/maximumByteCount`` bytes hold no line that parses.
	static func end(of descriptor: Int32, size: Int) -> Result<End, EndFailure> {
		guard size > 0 else {
			return .success(End(sequence: 0, endsALine: true))
		}
		var window = 4096
		while true {
			let start = max(0, size - window)
			var bytes = [UInt8](repeating: 0, count: size - start)
			var filled = 0
			while filled < bytes.count {
				let count = bytes.withUnsafeMutableBytes {
					pread(descriptor, $0.baseAddress! + filled, $0.count - filled, off_t(start + filled))
				}
				if count < 0, errno == EINTR {
					continue
				}
				guard count > 0 else {
					return .failure(EndFailure(count < 0 ? reason(errno) : "it was cut short while being read"))
				}
				filled += count
			}
			let endsALine = bytes.last == UInt8(ascii: "\n")
			var lineEnd = lastNewline(in: bytes, before: bytes.count)
			// A last line cut short of its newline alone is whole: the append's newline completes it, so its sequence
			// is taken, never given again.
			if !endsALine, lineEnd != nil || start == 0,
				let line = parse(bytes[(lineEnd.map { $0 + 1 } ?? 0)..<bytes.count])
			{
				return .success(End(sequence: line.s, endsALine: false))
			}
			// From the last newline back: each line between two newlines (or the window's start, when it is the
			// journal's start) is complete.
			while let end = lineEnd {
				let previous = lastNewline(in: bytes, before: end)
				guard previous != nil || start == 0 else {
					break
				}
				let lineStart = previous.map { $0 + 1 } ?? 0
				if let line = parse(bytes[lineStart..<end]) {
					return .success(End(sequence: line.s, endsALine: endsALine))
				}
				lineEnd = previous
			}
			// The journal's start: a journal of no complete line has issued nothing; complete lines none of which
			// parses say nothing of what was issued, and numbering again from 1 could give a settled sequence again.
			if start == 0 {
				guard lastNewline(in: bytes, before: bytes.count) == nil else {
					return .failure(EndFailure("none of its lines holds a sequence"))
				}
				return .success(End(sequence: 0, endsALine: endsALine))
			}
			guard window < SettingsFile.maximumByteCount else {
				return .failure(
					EndFailure("its last \(SettingsFile.maximumByteCount >> 20) MiB hold no line with a sequence"))
			}
			window *= 4
		}
	}

	/// The index of the last newline in `bytes` before `end`.
	private static func lastNewline(in bytes: [UInt8], before end: Int) -> Int? {
		bytes.withUnsafeBufferPointer { buffer in
			var index = end - 1
			while index >= 0 {
				if buffer[index] == UInt8(ascii: "\n") {
					return index
				}
				index -= 1
			}
			return nil
		}
	}

	struct EndFailure: Error {
		let reason: String

		init(_ reason: String) {
			self.reason = reason
		}
	}

	/// Why an append failed, as a sentence.
	package struct AppendFailure: Error {
		package let sentence: String

		init(_ sentence: String) {
			self.sentence = sentence
		}
	}

	/// Replaces the journal with `lines` (atomically, as the settings file is replaced): to create it, or to drop
	/// what its reader has settled. The caller holds the settings file's lock.
	///
	/// - Returns: `nil` once written, else why not, as a sentence.
	package func replace(with lines: [Line]) -> String? {
		file.replaceBesideFile(with: Self.bytes(of: lines))
	}

	/// Whether the journal holds more bytes than `lines` written alone would: lines a reader of the latest ones only
	/// (``read(latestOnly:)``) did not see. `true` when its size cannot be known. Opened as the journal is read, never
	/// through a link at its name.
	package func holdsMore(than lines: [Line]) -> Bool {
		let size = file.withBesideFileOpened { descriptor -> Int? in
			var status = stat()
			return fstat(descriptor, &status) == 0 ? Int(status.st_size) : nil
		}
		guard case .opened(let bytes?) = size else {
			return true
		}
		return Self.holdsMore(than: lines, byteCount: bytes)
	}

	/// Whether a journal of `byteCount` bytes holds more than `lines` written alone would (see
	/// ``holdsMore(than:)``), its size known from a read (``readCounting(latestOnly:)``) under the same lock.
	package static func holdsMore(than lines: [Line], byteCount: Int) -> Bool {
		byteCount > bytes(of: lines).count
	}

	private static func bytes(of lines: [Line]) -> Data {
		let encoder = JSONEncoder()
		encoder.outputFormatting = .sortedKeys
		var data = Data()
		for line in lines {
			guard let encoded = try? encoder.encode(line) else {
				continue
			}
			data.append(encoded)
			data.append(UInt8(ascii: "\n"))
		}
		return data
	}

	private static func reason(_ code: Int32) -> String {
		String(cString: strerror(code))
	}
}

/// `read(2)` into `buffer`, named apart from the journal's own `read`.
private func readSome(_ descriptor: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Int {
	read(descriptor, buffer.baseAddress, buffer.count)
}
