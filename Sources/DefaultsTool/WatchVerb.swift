import Defaults
import Dispatch
import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

extension Verb {
	static let watch = Verb(
		name: "watch", synopsis: "<domain> [<key>...] [--count <n>] [--timeout <seconds>]",
		summary: "print each change to a domain as it happens, from any process",
		details: """
			Prints "key = value" (on one line) each time a key of the domain changes, or "key (removed)", until
			interrupted (Ctrl-C or SIGTERM ends it with status 0). With keys, only those are watched. Changes made by
			other processes are seen within moments; only keys whose value actually changed are printed.
			--json prints one JSON object a line: {"key": …, "value": …} or {"key": …, "removed": true}.
			  --count <n>          exit after <n> changes
			  --timeout <seconds>  exit after that long: with status 0, or 1 when --count was given and fewer
			                       changes came
			A line "Watching <file>" goes to standard error once the watch is in place.
			"""
	) { context, tokens throws(ToolError) in
		var context = context
		var arguments = try VerbArguments(tokens, verb: "watch", context: &context, options: [.count, .timeout])
		let domain = try Domain(arguments.takeDomain(), verb: "watch")
		let keys = arguments.positionals
		let count = try arguments.number("--count").map { Int(exactly: $0) }
		if count == .some(nil) || count == 0 {
			throw .usage("--count needs a positive whole number.", verb: "watch")
		}
		let timeout = try arguments.number("--timeout")
		let store = try domain.openStore()
		FailureLog.shared.printAtOnce()
		let watcher = ChangePrinter(
			store: store, keys: keys.isEmpty ? nil : Set(keys), isJSON: context.isJSON, limit: count ?? nil)
		watcher.run(timeout: timeout, domainPath: domain.path)
	}
}

/// Prints the changes of a store's keys: on each signal from the store's observers, and on a short timer when the
/// whole domain is watched, since observers hear only of keys they name and a new key has no observer yet.
///
/// `@unchecked`: the values are property-list values, which `Any` cannot promise to be `Sendable`; `lock` guards
/// them, and they are only copied out of the store.
final class ChangePrinter: @unchecked Sendable {
	private let store: Defaults.FileStore
	/// `nil` when every key is watched.
	private let keys: Set<String>?
	private let isJSON: Bool
	private let limit: Int?

	private struct State {
		/// The values last printed (or found at the start).
		var values: [String: Any]
		var printed = 0
	}

	private let lock = NSLock()
	private var state = State(values: [:])

	init(store: Defaults.FileStore, keys: Set<String>?, isJSON: Bool, limit: Int?) {
		self.store = store
		self.keys = keys
		self.isJSON = isJSON
		self.limit = limit
	}

	/// Watches until interrupted, the count is reached or the time is up; never returns.
	func run(timeout: Double?, domainPath: String) -> Never {
		let observedKeys: [Defaults.Keys] = (keys.map(Array.init) ?? store.storedKeys()).sorted().map { name in
			Defaults.Key<Defaults.AnySerializable?>(name, suite: store)
		}
		let observation = Defaults.observe(keys: observedKeys, options: []) { [self] in
			printChanges()
		}
		let initial = currentValues()
		lock.withLock { state.values = initial }
		var timer: (any DispatchSourceTimer)?
		if keys == nil {
			timer = DispatchSource.makeTimerSource(queue: .global())
			timer?.schedule(deadline: .now() + .milliseconds(200), repeating: .milliseconds(200))
			timer?.setEventHandler { [self] in printChanges() }
			timer?.resume()
		}
		// A plain handler rather than a dispatch signal source, which on Linux sees a signal only if every thread
		// blocks it, and the store's watcher thread does not. Output is unbuffered and a watch writes nothing, so
		// there is nothing to flush: `_exit` is safe in a handler, `exit` is not.
		for signalNumber in [SIGINT, SIGTERM] {
			signal(signalNumber) { _ in _exit(0) }
		}
		if let timeout {
			DispatchQueue.main.asyncAfter(deadline: .now() + timeout) { [self] in
				let isShort = limit.map { limit in lock.withLock { state.printed < limit } } ?? false
				if isShort {
					Output.error("The time ran out before \(limit!) changes came.")
				}
				exit((isShort ? ExitStatus.notFound : .success).rawValue)
			}
		}
		Output.errorText("Watching \(domainPath)\n")
		withExtendedLifetime((observation, timer)) {
			dispatchMain()
		}
	}

	/// The watched keys' values as the store holds them now.
	private func currentValues() -> [String: Any] {
		let all = store.dictionaryRepresentation
		guard let keys else {
			return all
		}
		return all.filter { keys.contains($0.key) }
	}

	/// Prints each watched key whose value differs from the one last printed; exits once the count is reached.
	private func printChanges() {
		let current = currentValues()
		lock.withLock {
			let names = Set(state.values.keys).union(current.keys).sorted()
			for name in names {
				let old = state.values[name]
				let new = current[name]
				switch (old, new) {
				case (nil, nil): continue
				case (let old?, let new?) where Defaults.PropertyList.isEqual(old, new): continue
				default: break
				}
				state.values[name] = new
				Output.line(line(key: name, value: new))
				state.printed += 1
				if let limit, state.printed >= limit {
					exit(ExitStatus.success.rawValue)
				}
			}
		}
	}

	private func line(key: String, value: Any?) -> String {
		if isJSON {
			let value = value.map { "\"value\":" + JSONFormat.encode($0, pretty: false) } ?? "\"removed\":true"
			return "{\"key\":\(JSONFormat.string(key)),\(value)}"
		}
		let name = TextFormat.quotedIfNeeded(key)
		return value.map { "\(name) = \(TextFormat.compact($0))" } ?? "\(name) (removed)"
	}
}
