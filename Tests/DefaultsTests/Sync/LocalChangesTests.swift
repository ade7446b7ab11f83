import Foundation
import Testing

@testable import Defaults

/// The journal of intent: which changes were made on purpose, recorded by whoever writes the settings file.
@Suite(.scaledTimeLimit(minutes: 1)) struct LocalChangesTests {
	/// A flush appends one line per key it writes, once the journal exists, with sequences that only go up; a store
	/// with no journal beside its file records nothing (no engine syncs it).
	@Test func aFlushRecordsEveryKeyItWritesOnceTheJournalExists() throws {
		let folder = try TemporaryDirectory()
		var failures: [Defaults.Failure] = []
		let settings = SettingsFile(url: folder.file("app.plist"))
		let store = Defaults.FileStore(file: settings, failures: &failures)
		let journal = ChangeJournal(besideSettingsFile: settings)
		try store.write(1, forKey: "before")
		#expect(store.flush())
		guard case .missing = journal.read() else {
			Issue.record("a flush made a journal")
			return
		}
		#expect(journal.replace(with: []) == nil)
		try store.write(2, forKey: "b")
		try store.write(3, forKey: "a")
		#expect(store.flush())
		store.removeValue(forKey: "a")
		#expect(store.flush())
		guard case .lines(let lines) = journal.read() else {
			Issue.record("no journal")
			return
		}
		#expect(lines.map(\.k) == ["a", "b", "a"])
		#expect(lines.map(\.s) == [1, 2, 3])
		#expect(lines.allSatisfy { $0.p == getpid() })
	}

	/// A last line a crash cut short is not a line; the next append starts a line of its own after it, and a line
	/// with no name carries the sequence on after the journal was emptied.
	@Test func aTornLastLineIsIgnoredAndSequencesGoOn() throws {
		let folder = try TemporaryDirectory()
		let settings = SettingsFile(url: folder.file("app.plist"))
		let journal = ChangeJournal(besideSettingsFile: settings)
		#expect(journal.replace(with: [ChangeJournal.Line(s: 40, k: nil, p: nil)]) == nil)
		let handle = try FileHandle(forWritingTo: URL(filePath: journal.file.path))
		try handle.seekToEnd()
		try handle.write(contentsOf: Data(#"{"k":"half","s":4"#.utf8))
		try handle.close()
		guard case .success(let appended) = journal.append(["x"]), case .lines(let lines) = journal.read() else {
			Issue.record("the journal could not be appended to or read")
			return
		}
		#expect(appended.map(\.s) == [41])
		#expect(lines.map(\.k) == [nil, "x"])
	}

	/// A last line whole but for its newline (a write cut short at its last byte) keeps its sequence: the append's
	/// newline completes it, and the new line numbers after it, never with the same sequence. A journal whose lines
	/// all fail to parse refuses the append instead of numbering from 1 again.
	@Test func aLastLineWholeButForItsNewlineKeepsItsSequenceAndUnparseableLinesRefuseTheAppend() throws {
		let folder = try TemporaryDirectory()
		let settings = SettingsFile(url: folder.file("app.plist"))
		let journal = ChangeJournal(besideSettingsFile: settings)
		#expect(journal.replace(with: [ChangeJournal.Line(s: 40, k: nil, p: nil)]) == nil)
		let handle = try FileHandle(forWritingTo: URL(filePath: journal.file.path))
		try handle.seekToEnd()
		try handle.write(contentsOf: Data(#"{"k":"whole","p":1,"s":41}"#.utf8))
		try handle.close()
		guard case .success(let appended) = journal.append(["x"]), case .lines(let lines) = journal.read() else {
			Issue.record("the journal could not be appended to or read")
			return
		}
		#expect(appended.map(\.s) == [42])
		#expect(lines.map(\.s) == [40, 41, 42])

		try Data("not a line\nnor this\n".utf8).write(to: URL(filePath: journal.file.path))
		guard case .failure(let failure) = journal.append(["y"]) else {
			Issue.record("an append to a journal of no readable line numbered from scratch")
			return
		}
		#expect(failure.sentence.contains("none of its lines holds a sequence"), "\(failure.sentence)")
	}

	/// For a store without a settings file the journal is in memory, fed by the commit taps; values the engine
	/// applies are not recorded.
	@Test func theInMemoryJournalRecordsWritesButNotReceivedValues() {
		let intents = IntentLog(isInMemory: true)
		intents.noteWrite("theme")
		IntentLog.$isApplyingReceived.withValue(true) {
			intents.noteWrite("font")
		}
		intents.noteWrite("theme")
		#expect(intents.memoryLines.map(\.k) == ["theme", "theme"])
		#expect(intents.memoryLines.map(\.s) == [1, 2])
		intents.compact { _ in true }
		#expect(intents.memoryLines == [ChangeJournal.Line(s: 2, k: nil, p: nil)])
	}

	/// A pending line that outlives the settled ones after it does not take the sequence back: the next write gets
	/// a sequence above every settled one, so it is pending and pushed.
	@Test func compactingTheInMemoryJournalAroundAPendingLineKeepsTheLastSequence() {
		let intents = IntentLog(isInMemory: true)
		intents.noteWrite("x")
		for _ in 0..<63 {
			intents.noteWrite("b")
		}
		let settled = ["b": 64]
		intents.compact { line in line.k.map { settled[$0, default: 0] >= line.s } ?? true }
		#expect(intents.memoryLines.first == ChangeJournal.Line(s: 1, k: "x", p: nil))
		#expect(intents.memoryLines.last?.s == 64)
		intents.noteWrite("b")
		#expect(intents.memoryLines.last == ChangeJournal.Line(s: 65, k: "b", p: nil))
	}
}
