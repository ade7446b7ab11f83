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
	}

	let lines: [Line]

	init(text: String) {
		lines = text.split(separator: "\n").compactMap(Self.parse)
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
		case ("try", 3): return .attempt(name: fields[1], value: value(fields[2]))
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
