import Foundation
import Testing

@testable import Defaults

/// The journal's appends read only its end, never restart its sequences, and its reader reads it however long it
/// grew.
@Suite(.scaledTimeLimit(minutes: 1)) struct ChangeJournalTests {
	/// A journal of `head`, then `gap` bytes of zeros (made sparse, so cheap), then `tail`.
	static func journal(
		in folder: TemporaryDirectory, head: String, gap: Int, tail: String
	) throws -> (settings: SettingsFile, journal: ChangeJournal) {
		let settings = SettingsFile(url: folder.file("app.plist"))
		let journal = ChangeJournal(besideSettingsFile: settings)
		#expect(journal.replace(with: []) == nil)
		let handle = try FileHandle(forWritingTo: URL(filePath: journal.file.path))
		try handle.write(contentsOf: Data(head.utf8))
		try handle.truncate(atOffset: UInt64(head.utf8.count + gap))
		try handle.seekToEnd()
		try handle.write(contentsOf: Data(tail.utf8))
		try handle.close()
		return (settings, journal)
	}

	/// Past the most a whole read takes (64 MiB), an append still finds the last sequence and goes on from it. It
	/// read the whole journal before, was refused, and started again at 1: lines at or below the keys' settled
	/// sequences, never pushed.
	@Test func sequencesGoOnInAJournalLargerThanAWholeReadTakes() throws {
		let folder = try TemporaryDirectory()
		let (_, journal) = try Self.journal(
			in: folder, head: #"{"k":"a","p":1,"s":7}"# + "\n", gap: SettingsFile.maximumByteCount + 1,
			tail: "\n" + #"{"k":"b","p":1,"s":100}"# + "\n")
		guard case .success(let appended) = journal.append(["x", nil, "y"], reserving: 2) else {
			Issue.record("the append failed")
			return
		}
		#expect(appended.map(\.s) == [103, 104, 105])
		#expect(appended.map(\.k) == ["x", nil, "y"])
	}

	/// An append that cannot find the last sequence (the last 64 MiB hold no line) fails, and the flush keeps its
	/// changes and says why, rather than record them under sequences that start again.
	@Test func anAppendThatCannotFindTheLastSequenceFailsAndTheFlushKeepsItsChanges() throws {
		let folder = try TemporaryDirectory()
		let (settings, journal) = try Self.journal(
			in: folder, head: #"{"k":"a","p":1,"s":7}"# + "\n", gap: SettingsFile.maximumByteCount + 1, tail: "\n")
		let size = try FileManager.default.attributesOfItem(atPath: journal.file.path)[.size] as? Int
		if case .success(let appended) = journal.append(["x"]) {
			Issue.record("appended \(appended) without knowing the last sequence")
		}
		FailureRecorder.start()
		var failures: [Defaults.Failure] = []
		let store = Defaults.FileStore(file: settings, failures: &failures)
		try store.write(1, forKey: "x")
		#expect(!store.flush())
		#expect(!FailureRecorder.failures(mentioning: journal.file.path).isEmpty)
		#expect(store.storedValue(forKey: "x") as? Int == 1, "the change stays in memory")
		store.discardPendingChanges()
		#expect(!FileManager.default.fileExists(atPath: settings.path), "the settings file was not written")
		#expect(try FileManager.default.attributesOfItem(atPath: journal.file.path)[.size] as? Int == size)
	}

	/// A key name longer than the first window read from the end: the window widens until the line is whole. A last
	/// line a crash cut short, and a line that does not parse, are passed over.
	@Test func theEndIsFoundPastALongLineATornLineAndGarbage() throws {
		let folder = try TemporaryDirectory()
		let long = String(repeating: "n", count: 100_000)
		let (_, journal) = try Self.journal(
			in: folder, head: #"{"k":"a","p":1,"s":7}"# + "\n" + #"{"k":"\#(long)","p":1,"s":8}"# + "\nnot a line\n",
			gap: 0, tail: #"{"k":"half","s":9"#)
		guard case .success(let appended) = journal.append(["x"]) else {
			Issue.record("the append failed")
			return
		}
		#expect(appended.map(\.s) == [9])
		guard case .lines(let lines) = journal.read() else {
			Issue.record("the journal could not be read")
			return
		}
		#expect(lines.map(\.s) == [7, 8, 9])
		#expect(lines.last?.k == "x")
	}

	/// A journal larger than a whole read takes is read a chunk at a time; the reader of pending changes keeps the
	/// last line of each name and the last line. Names with escapes take the decoder's way.
	@Test func aJournalLargerThanAWholeReadIsReadKeepingTheLastLineOfEachName() throws {
		let folder = try TemporaryDirectory()
		let settings = SettingsFile(url: folder.file("app.plist"))
		let journal = ChangeJournal(besideSettingsFile: settings)
		#expect(journal.replace(with: []) == nil)
		// 1 MiB lines: few to parse, many bytes.
		let filler = String(repeating: "f", count: 1 << 20)
		var data = Data()
		for sequence in 1...66 {
			data.append(contentsOf: Data(#"{"k":""#.utf8))
			data.append(contentsOf: Data(filler.utf8))
			data.append(contentsOf: Data((#"\#(sequence % 2)","p":1,"s":\#(sequence)}"# + "\n").utf8))
		}
		data.append(contentsOf: Data((#"{"k":"a\/b","p":1,"s":67}"# + "\n").utf8))
		data.append(contentsOf: Data((#"{"k":"a","p":1,"s":68}"# + "\n").utf8))
		data.append(contentsOf: Data((#"{"s":69}"# + "\n").utf8))
		try data.write(to: URL(filePath: journal.file.path))
		#expect(data.count > SettingsFile.maximumByteCount)
		guard case .lines(let lines) = journal.read(latestOnly: true) else {
			Issue.record("the journal could not be read")
			return
		}
		#expect(lines.map(\.s) == [65, 66, 67, 68, 69])
		let lengths: [Int?] = lines.map { $0.k?.count }
		let expected: [Int?] = [filler.count + 1, filler.count + 1, 3, 1, nil]
		#expect(lengths == expected)
		#expect(lines[2].k == "a/b")
	}
}
