import Foundation

/// Judges a fault-injection run from etcd's full history, etcd's final state and every machine's log.
///
/// ```swift
/// let violations = FaultChecker(history: history, finalState: state, logs: fleet.logs).violations
/// #expect(violations.isEmpty, "\(violations)")
/// ```
struct FaultChecker {
	let history: EtcdHistory
	/// etcd's values at the end, read with a range.
	let finalState: [String: String]
	let logs: [MachineLog]
	let sharedNames: [String]
	/// The shared counters the machines add 1 to with synced atomic updates.
	var counterNames: [String] = []
	/// Each machine's settings file as it ends (the values of ``MachineFleet/settingsFileValues(of:)``; `nil` when it
	/// cannot be read), by machine: several processes (logs) may share one.
	var settingsFiles: [[String: String]?] = []

	/// The conflict rule of the DocC article "Syncing across machines", as the checker applies it: of two changes to a key made
	/// without seeing each other, the one etcd commits first is kept on every machine; the other fails its
	/// compare-and-swap and is never stored. So every machine ends on the last value etcd's history holds for the key.
	static func valueTheConflictRulePicks(_ events: [EtcdHistory.Event]) -> String? {
		events.last?.value
	}

	var violations: [String] {
		historyMatchesTheFinalState + everyMachineConverged + noAcknowledgedWriteLost + sharedKeysFollowTheRule
			+ noEchoPushes + noValueGoesBack + everySettingsFileConverged + everyIncrementCountedOnce
	}

	/// Every settings file ends on etcd's values, whichever of the processes sharing it wrote it last.
	private var everySettingsFileConverged: [String] {
		settingsFiles.enumerated().compactMap { machine, values in
			values == finalState
				? nil
				: "machine \(machine)'s settings file ended on \(values.map { "\($0)" } ?? "nothing readable"), "
					+ "etcd on \(finalState)"
		}
	}

	/// Each counter's history rises by 1 at every revision (each is one committed increment, so it never goes back or
	/// stands still), every increment a machine saw committed is a value of that history, no two machines saw the same
	/// one, and the counter ends between the acknowledged increments and those plus the ones of unknown outcome.
	private var everyIncrementCountedOnce: [String] {
		counterNames.flatMap { name -> [String] in
			var violations: [String] = []
			let events = history.events(of: name)
			var previous = 0
			for event in events {
				guard let value = event.value.flatMap(Int.init), value == previous + 1 else {
					violations.append("\(name) went from \(previous) to \(event) (history: \(events))")
					break
				}
				previous = value
			}
			let seen = logs.flatMap { $0.incremented.filter { $0.counter == name }.map(\.value) }
			let stored = Set(events.compactMap { $0.value.flatMap(Int.init) })
			let repeated = Dictionary(grouping: seen) { $0 }.filter { $0.value.count > 1 }.keys.sorted()
			if !repeated.isEmpty {
				violations.append("\(name): several increments acknowledged with the same value: \(repeated)")
			}
			let missing = seen.filter { !stored.contains($0) }.sorted()
			if !missing.isEmpty {
				violations.append("\(name): increments acknowledged with values etcd never stored: \(missing)")
			}
			// Unknown outcomes are not per counter in the log (a kill), so they bound every counter's total.
			let unknown = logs.map(\.unknownIncrements).reduce(0, +)
			let final = finalState[name].flatMap(Int.init) ?? 0
			if final < seen.count || final > seen.count + unknown {
				violations.append(
					"\(name) ended on \(final) after \(seen.count) acknowledged increments and \(unknown) of unknown "
						+ "outcome")
			}
			return violations
		}
	}

	private var historyMatchesTheFinalState: [String] {
		history.finalValues == finalState
			? [] : ["etcd's history ends on \(history.finalValues), its range reads \(finalState)"]
	}

	/// Every machine ends holding etcd's final values.
	private var everyMachineConverged: [String] {
		logs.enumerated().compactMap { index, log in
			guard let final = log.finalValues else {
				return "machine \(index) never logged its final values"
			}
			return final == finalState ? nil : "machine \(index) ended on \(final), etcd on \(finalState)"
		}
	}

	/// A machine's own key ends on its owner's last acknowledged write, or on a write the owner made after it (one
	/// whose acknowledgement a kill cut off).
	private var noAcknowledgedWriteLost: [String] {
		logs.enumerated().compactMap { index, log in
			let name = "own\(index)"
			var allowed: [String?] = [nil]
			for line in log.lines {
				switch line {
				case .acknowledged(name, let value): allowed = [value]
				case .attempt(name, let value): allowed.append(value)
				default: break
				}
			}
			let final = finalState[name]
			return allowed.contains(final)
				? nil
				: "machine \(index)'s own key ended on \(final ?? "nothing") but its last acknowledged write was "
					+ "\(allowed.first.map { $0 ?? "a removal" } ?? "-") (history: \(history.events(of: name)))"
		}
	}

	/// Each shared key ends on the value the conflict rule picks, and that value is one a machine wrote.
	private var sharedKeysFollowTheRule: [String] {
		sharedNames.compactMap { name in
			let events = history.events(of: name)
			let picked = Self.valueTheConflictRulePicks(events)
			if finalState[name] != picked {
				return "\(name) ended on \(finalState[name] ?? "nothing"), the rule picks \(picked ?? "nothing")"
			}
			let written = Set(logs.flatMap { $0.attempts.filter { $0.name == name }.compactMap(\.value) })
			if let picked, !written.contains(picked) {
				return "\(name) ended on \(picked), which no machine wrote"
			}
			return nil
		}
	}

	/// Every written value is unique, so a value etcd stored twice for a name was pushed back by a machine that
	/// received it (an echo), or pushed again after it was replaced (a resurrection).
	private var noEchoPushes: [String] {
		let names = Set(history.events.map(\.name))
		return names.sorted().flatMap { name in
			let puts = history.events(of: name).filter { $0.value != nil }
			let counts = Dictionary(grouping: puts, by: { $0.value! })
			return counts.values.filter { $0.count > 1 }.map { "\(name): the same value stored more than once: \($0)" }
		}
	}

	/// Etcd never stores a machine's own key's older value after a newer one of the same owner.
	private var noValueGoesBack: [String] {
		logs.enumerated().compactMap { index, log in
			let name = "own\(index)"
			let order = log.attempts.filter { $0.name == name }.compactMap(\.value)
			let positions = history.events(of: name).compactMap { $0.value.flatMap(order.firstIndex(of:)) }
			return positions == positions.sorted()
				? nil : "machine \(index)'s own key went back to an older value: \(history.events(of: name))"
		}
	}

	/// Pushes of received values that etcd refused: a machine that reports one of its changes lost a conflict
	/// (`Defaults.Failure`, "A local change lost a sync conflict: '<name>': the local value <value> lost …") although it
	/// never wrote that value. Such an echo never reaches etcd's history (its compare-and-swap failed), so only the
	/// machine's reports show it; a report naming the wrong value looks the same, and is as wrong for the app that
	/// reads it. `reports[i]` is machine `i`'s standard error; `machines[i]` the settings file it writes, when several
	/// processes share one (a value any of them wrote is an edit of that machine).
	static func echoAttempts(logs: [MachineLog], reports: [String], machines: [Int]? = nil) -> [String] {
		let machines = machines ?? Array(logs.indices)
		return zip(logs.indices, reports).flatMap { index, report in
			report.matches(of: /lost a sync conflict: '([^']+)': the local value (\S+) lost/).compactMap { match in
				let (name, value) = (String(match.output.1), String(match.output.2))
				let written = logs.indices.filter { machines[$0] == machines[index] }.flatMap { other in
					logs[other].attempts.filter { $0.name == name }.map { $0.value ?? "(removed)" }
				}
				// Whether the machine was restarted tells a restart's lagging state from an echo of a running machine.
				let starts = logs[index].lines.filter { if case .start = $0 { true } else { false } }.count
				return written.contains(value)
					? nil
					: "machine \(index) (started \(starts) times) reports its change \(name)=\(value) lost, a value it "
						+ "never wrote (an echo push of a received value, or the wrong value reported): \(match.output.0)"
			}
		}
	}
}
