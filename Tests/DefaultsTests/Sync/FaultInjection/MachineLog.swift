import Foundation

/// One machine's log, over all its incarnations.
struct MachineLog {
	enum Line: Equatable {
		case start(incarnation: Int)
		case attempt(name: String, value: String?)
		case acknowledged(name: String, value: String?)
		case done
		case view(milliseconds: Int64, pending: Int, values: [String: String])
		case final(values: [String: String])
		case increment(counter: String)
		/// A committed increment and the value it stored.
		case incremented(counter: String, value: Int)
		case incrementFailed(counter: String, reason: String)
		case incrementUnknown(counter: String)
	}

	let lines: [Line]
	/// When each value was written (`try` lines carry the time since the shared-file shape), for arrival times.
	let attemptMilliseconds: [String: Int64]
	/// When the last write or increment began (the time its `try` or `inc` line carries), if any line carries one.
	let lastWriteMilliseconds: Int64?
	/// When each committed increment, by `counter=value` (the value it stored), began and when its answer came (the
	/// times its `inc` and `incok` lines carry): etcd committed it in between.
	let incrementMilliseconds: [String: (begun: Int64, answered: Int64)]

	init(text: String) {
		let raw = text.split(separator: "\n")
		lines = raw.compactMap(Self.parse)
		var times: [String: Int64] = [:]
		var last: Int64?
		var increments: [String: (begun: Int64, answered: Int64)] = [:]
		var begun: Int64?
		for line in raw where line.hasPrefix("try ") || line.hasPrefix("inc") || line.hasPrefix("start ") {
			let fields = line.split(separator: " ")
			if fields[0] == "incok", fields.count == 4, let begun, let answered = Int64(fields[3]) {
				increments["\(fields[1])=\(fields[2])"] = (begun, answered)
			}
			if fields[0] != "inc" && fields[0] != "try" {
				// An answer, or a new incarnation: the increment begun before is over.
				begun = nil
				continue
			}
			guard let milliseconds = fields.count == (line.hasPrefix("try ") ? 4 : 3) ? Int64(fields.last!) : nil
			else {
				continue
			}
			if line.hasPrefix("try ") {
				times[String(fields[2])] = milliseconds
			} else {
				begun = milliseconds
			}
			last = max(last ?? milliseconds, milliseconds)
		}
		attemptMilliseconds = times
		lastWriteMilliseconds = last
		incrementMilliseconds = increments
	}

	/// Every view this machine logged, oldest first.
	var views: [(milliseconds: Int64, pending: Int, values: [String: String])] {
		lines.compactMap {
			if case .view(let milliseconds, let pending, let values) = $0 {
				(milliseconds, pending, values)
			} else {
				nil
			}
		}
	}

	/// The values of every increment this machine saw committed, by counter.
	var incremented: [(counter: String, value: Int)] {
		lines.compactMap { if case .incremented(let counter, let value) = $0 { (counter, value) } else { nil } }
	}

	/// Increments that may have been committed without this machine learning it: answered `incunknown`, or begun and
	/// never answered (the process was killed in between, ``incrementsCutByAKill``).
	var unknownIncrements: Int {
		lines.filter { if case .incrementUnknown = $0 { true } else { false } }.count + incrementsCutByAKill
	}

	/// Increments begun and never answered: the process was killed while the update was on its way (or, for the last,
	/// before it logged the answer).
	var incrementsCutByAKill: Int {
		var cut = 0
		var open = false
		for line in lines {
			switch line {
			case .increment:
				cut += open ? 1 : 0
				open = true
			case .incremented, .incrementFailed, .incrementUnknown:
				open = false
			case .start:
				cut += open ? 1 : 0
				open = false
			default: break
			}
		}
		return cut + (open ? 1 : 0)
	}

	/// The reasons of the increments that failed having changed nothing.
	var failedIncrements: [String] {
		lines.compactMap { if case .incrementFailed(_, let reason) = $0 { reason } else { nil } }
	}

	var isDone: Bool {
		// Done in the latest incarnation.
		guard let lastStart = lines.lastIndex(where: { if case .start = $0 { true } else { false } }) else {
			return false
		}
		return lines[lastStart...].contains(.done)
	}

	var lastView: (milliseconds: Int64, pending: Int, values: [String: String])? {
		for line in lines.reversed() {
			if case .view(let milliseconds, let pending, let values) = line {
				return (milliseconds, pending, values)
			}
		}
		return nil
	}

	var finalValues: [String: String]? {
		for case .final(let values) in lines.reversed() {
			return values
		}
		return nil
	}

	/// Every value this machine tried to write, per name.
	var attempts: [(name: String, value: String?)] {
		lines.compactMap { if case .attempt(let name, let value) = $0 { (name, value) } else { nil } }
	}

	private static func parse(_ line: Substring) -> Line? {
		let fields = line.split(separator: " ", maxSplits: 3).map(String.init)
		func value(_ text: String) -> String? { text == "-" ? nil : text }
		switch (fields.first, fields.count) {
		case ("start", 2): return Int(fields[1]).map { .start(incarnation: $0) }
		case ("try", 3), ("try", 4): return .attempt(name: fields[1], value: value(fields[2]))
		case ("inc", 2), ("inc", 3): return .increment(counter: fields[1])
		case ("incok", 3), ("incok", 4): return Int(fields[2]).map { .incremented(counter: fields[1], value: $0) }
		case ("incfail", 3): return .incrementFailed(counter: fields[1], reason: fields[2])
		case ("incunknown", 2): return .incrementUnknown(counter: fields[1])
		case ("ack", 3): return .acknowledged(name: fields[1], value: value(fields[2]))
		case ("done", 1): return .done
		case ("view", 4):
			guard let milliseconds = Int64(fields[1]), let pending = Int(fields[2]) else {
				return nil
			}
			return .view(milliseconds: milliseconds, pending: pending, values: values(fields[3]))
		case ("final", 2): return .final(values: values(fields[1]))
		default: return nil
		}
	}

	/// `name=value,…`, `-` for none; names without a value are left out, as etcd leaves them out.
	private static func values(_ text: String) -> [String: String] {
		var values: [String: String] = [:]
		for pair in text.split(separator: ",") {
			let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
			if parts.count == 2, parts[1] != "-" {
				values[parts[0]] = parts[1]
			}
		}
		return values
	}
}
