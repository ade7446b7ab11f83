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

	package func read() -> Contents {
		switch file.readBesideFile() {
		case .missing:
			return .missing
		case .refused(let reason):
			return .refused(reason)
		case .bytes(let data):
			return .lines(Self.lines(in: data))
		}
	}

	static func lines(in data: Data) -> [Line] {
		let decoder = JSONDecoder()
		var lines: [Line] = []
		var start = data.startIndex
		while let end = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
			if let line = try? decoder.decode(Line.self, from: data[start..<end]) {
				lines.append(line)
			}
			start = data.index(after: end)
		}
		return lines
	}

	/// Appends a line for each of `names`, in order, after the journal's last sequence, and syncs them to the disk;
	/// the caller holds the settings file's lock. Nothing when the journal does not exist. A `nil` name only takes
	/// a sequence (its reader's own use of one); `reserving` more are skipped before the first line, so that it
	/// takes them all.
	///
	/// - Returns: the lines appended (empty when there is no journal), or why they could not be, as a sentence.
	package func append(_ names: [String?], reserving: Int = 0) -> Result<[Line], AppendFailure> {
		guard !names.isEmpty else {
			return .success([])
		}
		if let sentence = file.changeRefusal() {
			return .failure(AppendFailure(sentence))
		}
		let (anchor, anchorRefusal) = FolderAnchor.opened(for: file)
		guard let anchor else {
			return .failure(AppendFailure(anchorRefusal ?? "The folder of \(file.path) could not be opened."))
		}
		defer { anchor.release() }
		let descriptor = movedAboveStandardStreams(
			openat(
				anchor.descriptor, anchor.name(file.fileName), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK
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
		var existing = Data()
		if case .bytes(let data) = file.readBesideFile() {
			existing = data
		}
		var sequence = (Self.lines(in: existing).last?.s ?? 0) + reserving
		let pid = getpid()
		let encoder = JSONEncoder()
		encoder.outputFormatting = .sortedKeys
		var appended: [Line] = []
		// A line a crash cut short ends here, so that the first new line starts a line of its own.
		var data = existing.last.map { $0 == UInt8(ascii: "\n") ? Data() : Data("\n".utf8) } ?? Data()
		for name in names {
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
		return file.replaceBesideFile(with: data)
	}

	private static func reason(_ code: Int32) -> String {
		String(cString: strerror(code))
	}
}
