import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// Random journals (valid lines in the writers' form and in other JSON forms, long lines, garbage, NUL runs, near
/// misses, and a last line whole, torn or garbage) read and appended to, against a model that knows only that a line
/// is JSON: a line parses exactly when `JSONDecoder` decodes it, `read()` gives the complete lines that parse,
/// `read(latestOnly:)` the last of each name and a last nameless one, and an append either refuses (complete lines,
/// none of which parses) or numbers after the last line that parses. Seeded: `DEFAULTS_JOURNAL_SEED` repeats a run,
/// and a failure names its case's seed. Bounded to about 2 s (under 5 s with a slow last case on a loaded machine; five
/// times that under the thread sanitizer, where a loaded machine made 17 cases in 2 s).
@Suite(.scaledTimeLimit(minutes: 1)) struct ChangeJournalRandomTests {
	static let budget = Duration.seconds(2)
	static let maximumCases = 400

	@Test func randomJournalsAreReadAndAppendedToAsTheModelSays() throws {
		let base =
			ProcessInfo.processInfo.environment["DEFAULTS_JOURNAL_SEED"].flatMap { UInt64($0) } ?? 0x10C_7A11_2029
		let folder = try TemporaryDirectory()
		let started = ContinuousClock.now
		var cases = 0
		while cases < Self.maximumCases, ContinuousClock.now - started < Self.budget.scaledForSanitizer {
			let seed = base &+ UInt64(cases)
			cases += 1
			var random = SeededRandom(seed: seed)
			let bytes = Self.journalBytes(using: &random)
			let journal = ChangeJournal(besideSettingsFile: SettingsFile(url: folder.file("app\(cases).plist")))
			try Data(bytes).write(to: URL(filePath: journal.file.path))
			let problems = Self.check(journal, holding: bytes, using: &random)
			try? FileManager.default.removeItem(atPath: journal.file.path)
			guard problems.isEmpty else {
				let report =
					"seed \(seed) (DEFAULTS_JOURNAL_SEED=\(seed) repeats it first): " + problems.joined(separator: "; ")
				print(report)
				Issue.record(Comment(rawValue: report))
				return
			}
		}
		#expect(cases >= 20, "only \(cases) cases in \(Self.budget.scaledForSanitizer)")
	}

	// MARK: The model

	/// The line in `bytes` as JSON says (the journal's lines are JSON; its fast reader of the writers' form must
	/// agree).
	static func oracle(_ bytes: ArraySlice<UInt8>) -> ChangeJournal.Line? {
		try? JSONDecoder().decode(ChangeJournal.Line.self, from: Data(bytes))
	}

	/// What was wrong with `journal`, which holds `bytes`, as sentences: none when everything agrees with the model.
	static func check(_ journal: ChangeJournal, holding bytes: [UInt8], using random: inout SeededRandom) -> [String] {
		var problems: [String] = []
		let segments = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
		let complete = segments.dropLast()
		let tail = segments.last ?? []
		for segment in segments where ChangeJournal.parse(segment) != oracle(segment) {
			problems.append(
				"parse(\(String(decoding: segment.prefix(120), as: UTF8.self).debugDescription)) gives "
					+ "\(String(describing: ChangeJournal.parse(segment))), JSON \(String(describing: oracle(segment)))"
			)
		}
		let lines = complete.compactMap(oracle)
		guard case .lines(let read) = journal.read() else {
			return problems + ["read() did not read"]
		}
		if read != lines {
			problems.append("read() gives \(read.map(\.s)), the model \(lines.map(\.s))")
		}
		var latest: [String: ChangeJournal.Line] = [:]
		for line in lines {
			if let name = line.k {
				latest[name] = line
			}
		}
		let expectedLatest =
			((lines.last.map { $0.k == nil ? [$0] : [] } ?? []) + latest.values).sorted { $0.s < $1.s }
		let (latestRead, byteCount) = journal.readCounting(latestOnly: true)
		if case .lines(let read) = latestRead {
			if read != expectedLatest {
				problems.append("read(latestOnly:) gives \(read.map(\.s)), the model \(expectedLatest.map(\.s))")
			}
			// What a locked step's compaction asks, from the read's size instead of opening the journal again.
			if byteCount != bytes.count
				|| ChangeJournal.holdsMore(than: read, byteCount: byteCount) != journal.holdsMore(than: read)
			{
				problems.append("the read counted \(byteCount) bytes of \(bytes.count)")
			}
		} else {
			problems.append("read(latestOnly:) did not read")
		}
		// The end: a last line whole but for its newline, else the last complete line that parses; none issued when
		// there is no complete line; refused when complete lines hold no sequence.
		let end: Int? =
			if !tail.isEmpty, let line = oracle(tail) {
				line.s
			} else if let line = lines.last {
				line.s
			} else if complete.isEmpty {
				0
			} else {
				nil
			}
		let names: [String?] = (0...Int(random.next(below: 3))).map { _ in
			random.next(below: 4) == 0 ? nil : "n\(random.next(below: 5))"
		}
		let reserving = Int(random.next(below: 3))
		switch (journal.append(names, reserving: reserving), end) {
		case (.failure, nil):
			return problems
		case (.failure(let failure), let end?):
			return problems + ["the append failed (\(failure.sentence)) after \(end)"]
		case (.success(let appended), nil):
			return problems + ["the append gave \(appended.map(\.s)) where no line holds a sequence"]
		case (.success(let appended), let end?):
			let expected = names.enumerated().map {
				ChangeJournal.Line(s: end + reserving + 1 + $0.offset, k: $0.element, p: getpid())
			}
			if appended != expected {
				problems.append("the append gave \(appended.map(\.s)), the model \(expected.map(\.s)) (end \(end))")
			}
			if let highest = lines.map(\.s).max(), appended.first.map({ $0.s <= highest }) ?? false {
				problems.append("the append gave \(appended.map(\.s)) at or below \(highest)")
			}
			let completed = (tail.isEmpty ? [] : [oracle(tail)].compactMap { $0 })
			guard case .lines(let after) = journal.read(), after == lines + completed + appended else {
				return problems + ["read() after the append is not the lines before it and the appended ones"]
			}
			guard case .success(let next) = journal.append(["again"]),
				next.map(\.s) == [(appended.last?.s ?? 0) + 1]
			else {
				return problems + ["a second append does not go on after the first"]
			}
			return problems
		}
	}

	// MARK: Random journals

	static func journalBytes(using random: inout SeededRandom) -> [UInt8] {
		var bytes: [UInt8] = []
		var sequence = random.next(below: 4) == 0 ? Int(random.next(below: 1 << 40)) : Int(random.next(below: 3))
		for _ in 0..<random.next(below: 40) {
			bytes += line(using: &random, sequence: &sequence)
			bytes.append(UInt8(ascii: "\n"))
		}
		sequence += 1
		// The last line: none (the journal ends a line), torn, whole but for its newline, or garbage.
		switch random.next(below: 4) {
		case 0:
			break
		case 1:
			let whole = writtenForm(name: name(using: &random), pid: 1, sequence: sequence)
			bytes += whole.prefix(Int(random.next(below: UInt64(whole.count))))
		case 2:
			bytes += writtenForm(name: name(using: &random), pid: Int(random.next(below: 100_000)), sequence: sequence)
		default:
			bytes += garbage(using: &random)
		}
		return bytes
	}

	/// One line, without its newline; one that parses numbers above `sequence`, which it moves on: the journal's
	/// writers number their lines in order, and garbage is not numbered.
	static func line(using random: inout SeededRandom, sequence: inout Int) -> [UInt8] {
		sequence += 1 + Int(random.next(below: 3))
		switch random.next(below: 20) {
		case 0..<9:
			let pid: Int? = random.next(below: 5) == 0 ? nil : Int(random.next(below: 100_000))
			return writtenForm(name: name(using: &random), pid: pid, sequence: sequence)
		case 9..<11:
			// Other JSON: keys in another order, spaces, escapes, a field the journal does not know.
			let forms = [
				#"{"s":\#(sequence),"k":"a"}"#, #" { "k" : "b\"q" , "s" : \#(sequence) } "#,
				#"{"k":"c\/d","p":2,"s":\#(sequence),"x":[1,{}]}"#, #"{"k":null,"s":\#(sequence)}"#,
			]
			return Array(forms[Int(random.next(below: UInt64(forms.count)))].utf8)
		case 11:
			// Longer than the first window an append reads from the end, up to a few of them.
			let name = String(repeating: "l", count: 4_000 + Int(random.next(below: 300_000)))
			return writtenForm(name: name, pid: 1, sequence: sequence)
		case 12..<14:
			return Array(repeating: 0, count: Int(random.next(below: 5_000)))
		case 14:
			return []
		case 15..<17:
			let highest = sequence - 1
			let bytes = nearMiss(using: &random, sequence: sequence)
			// A change that still parses (a digit changed) keeps the order only above the lines before it.
			guard let line = oracle(bytes[...]) else {
				return bytes
			}
			guard line.s > highest else {
				return garbage(using: &random)
			}
			sequence = line.s
			return bytes
		default:
			return garbage(using: &random)
		}
	}

	static func name(using random: inout SeededRandom) -> String? {
		let names: [String?] = [nil, "a", "b", "c", "", "é", "a b", "\u{1F600}"]
		return names[Int(random.next(below: UInt64(names.count)))]
	}

	/// The form the journal's writers give: `{"k":"name","p":1,"s":2}`, keys sorted, no space.
	static func writtenForm(name: String?, pid: Int?, sequence: Int) -> [UInt8] {
		var text = "{"
		if let name {
			text += #""k":"\#(name)","#
		}
		if let pid {
			text += #""p":\#(pid),"#
		}
		return Array((text + #""s":\#(sequence)}"#).utf8)
	}

	/// A line in the writers' form, changed a little: cut short, a byte changed, a NUL or a control byte put in, or
	/// something after it. It may still parse (a changed digit), with a sequence of its own: the model then decides.
	static func nearMiss(using random: inout SeededRandom, sequence: Int) -> [UInt8] {
		var bytes = writtenForm(name: "k\(random.next(below: 9))", pid: 7, sequence: sequence)
		let position = Int(random.next(below: UInt64(bytes.count)))
		switch random.next(below: 6) {
		case 0:
			bytes.removeSubrange(position...)
		case 1:
			bytes[position] = UInt8(random.next(below: 256))
		case 2:
			bytes.insert(0, at: position)
		case 3:
			bytes.insert(UInt8(1 + random.next(below: 31)), at: position)
		case 4:
			bytes += [0]
		default:
			bytes = Array(#"{"k":"k","p":7,"s":0"#.utf8) + Array("\(sequence)}".utf8)
		}
		return bytes.filter { $0 != UInt8(ascii: "\n") }
	}

	/// Random bytes without a newline, NULs and bytes that are not UTF-8 among them.
	static func garbage(using random: inout SeededRandom) -> [UInt8] {
		(0..<random.next(below: 200)).map { _ in
			let byte = UInt8(random.next(below: 256))
			return byte == UInt8(ascii: "\n") ? 0 : byte
		}
	}
}
