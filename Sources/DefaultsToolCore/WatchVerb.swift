import Defaults
import Dispatch
import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

extension Verb.Declaration {
	static let watch = Verb.Declaration(
		synopsis: "<domain> [<key>...]",
		summary: "print each change to a domain as it happens, from any process",
		details: """
			Prints "key = value" (on one line) each time a key of the domain changes, or "key (removed)", until
			interrupted (Ctrl-C or SIGTERM ends it with status 0). With keys, only those are watched. The file is
			read as soon as it changes (the file store's own watch: inotify on Linux) and checked once a second
			besides, so changes made by other processes are seen within moments; only keys whose value actually
			changed are printed. The file is only read: never locked, moved or changed. If it stops
			parsing during the watch, a warning goes to standard error and the watch goes on until it is rewritten.
			--json prints one JSON object a line: {"key": …, "value": …} or {"key": …, "removed": true}.
			A line "Watching <file>" goes to standard error once the watch is in place.
			""",
		options: [.count, .timeout]
	) { arguments throws(ToolError) in
		let domain = try arguments.takeDomainFile()
		let keys = arguments.positionals
		let count = try arguments.number(OptionSpec.count.name).map { Int(exactly: $0) }
		if count == .some(nil) || count == 0 {
			throw .usage("\(OptionSpec.count.name) needs a positive whole number.", verb: arguments.verb)
		}
		let timeout = try arguments.number(OptionSpec.timeout.name)
		let watcher = ChangePrinter(
			domain: domain, keys: keys.isEmpty ? nil : Set(keys), isJSON: arguments.isJSON, limit: count ?? nil)
		try watcher.run(timeout: timeout)
	}
}

extension OptionSpec {
	static let count = OptionSpec(name: "--count", valueName: "n", help: "exit after <n> changes")
	static let timeout = OptionSpec(
		name: "--timeout", valueName: "seconds",
		help: """
			exit after that long: with status 0, or 1 when --count was given and fewer
			changes came
			""")
}

/// Prints the changes of a domain's keys, woken by the settings file's watch, without ever opening a store on it.
///
/// A file store would move a file that stops parsing aside; the watch only reads the file, so a corrupt file stays
/// exactly as it is: the watch warns once and waits for it to parse again.
///
/// `@unchecked`: the values are property-list values, which `Any` cannot promise to be `Sendable`; every property
/// that changes is used only on `queue`.
final class ChangePrinter: @unchecked Sendable {
	/// How often the file's identity is checked besides the watch: for changes a watch can miss (a write within the
	/// file system's clock tick of the last one, a folder replaced).
	static let interval = DispatchTimeInterval.seconds(1)
	/// A file modified this recently (in seconds) is read again at the next check even if its identity is the same:
	/// file times have a coarse clock, so a second write of the same size may leave them as they were.
	static let recentness = 1.0

	private let domain: Domain
	/// `nil` when every key is watched.
	private let keys: Set<String>?
	private let isJSON: Bool
	private let limit: Int?
	private let queue = DispatchQueue(label: "defaults.watch")

	/// The values last printed (or found at the start).
	private var values: [String: Any] = [:]
	private var printed = 0
	/// The file as it was when last read; `nil` when there was none.
	private var identity: FileIdentity?
	/// The file was modified so recently when last read that it must be read again.
	private var isRecent = false
	/// The file did not parse (or could not be read) when last read: a warning was printed for this episode.
	private var isUnreadable = false

	init(domain: Domain, keys: Set<String>?, isJSON: Bool, limit: Int?) {
		self.domain = domain
		self.keys = keys
		self.isJSON = isJSON
		self.limit = limit
	}

	/// Watches until interrupted, the count is reached or the time is up; never returns.
	///
	/// - Throws: when the file is corrupt or cannot be read at the start.
	func run(timeout: Double?) throws(ToolError) -> Never {
		// The identity comes first: a change between it and the reading is seen as a change at the first check.
		let startIdentity = FileIdentity.ofFile(atPath: domain.path)
		let initial = try domain.values(mustExist: false)
		// The watch runs on Dispatch, which traps when it cannot get its descriptors.
		guard DispatchStart.isStarted else {
			throw ToolError("The domain cannot be watched: Too many open files.", status: .ioError)
		}
		queue.sync {
			identity = startIdentity
			isRecent = Self.isRecent(startIdentity)
			values = watched(initial)
		}
		let timer = DispatchSource.makeTimerSource(queue: queue)
		timer.schedule(deadline: .now() + Self.interval, repeating: Self.interval, leeway: .milliseconds(10))
		timer.setEventHandler { [self] in check() }
		timer.resume()
		// A domain that is a link is changed where the link points, which may be another folder: the target's folder
		// is watched too, else only the once-a-second check would see those changes.
		let target = domain.url.resolvingSymlinksInPath()
		for url in target == domain.url ? [domain.url] : [domain.url, target] {
			SettingsFile(url: url).watch { [self] in
				queue.async { self.check() }
			}
		}
		// A plain handler rather than a dispatch signal source, which on Linux sees a signal only if every thread
		// blocks it, and Dispatch's threads do not. Output is unbuffered and a watch writes nothing, so there is
		// nothing to flush: `_exit` is safe in a handler, `exit` is not.
		var ending = sigset_t()
		sigemptyset(&ending)
		for signalNumber in [SIGINT, SIGTERM] {
			signal(signalNumber) { _ in _exit(0) }
			sigaddset(&ending, signalNumber)
		}
		// The main thread, which waits below, takes them even if the command was started with them blocked.
		pthread_sigmask(SIG_UNBLOCK, &ending, nil)
		Output.errorText("Watching \(domain.path)\n")
		// The main thread just waits, rather than `dispatchMain()`, which makes the main queue a descriptor as the
		// thread leaves and traps when the process has none left; the watch's work runs on `queue`. The main thread
		// also keeps the time limit, not a Dispatch timer: at the descriptor limit Dispatch may have no timer
		// descriptor left, and a timer that never fires would make the watch outlive its --timeout.
		// At most a century: the parser takes any finite number, and a longer one would overflow the clock.
		let deadline = timeout.map { ContinuousClock.now + .milliseconds(Int((min($0, 3.2e9) * 1000).rounded(.up))) }
		while true {
			withExtendedLifetime(timer) {
				let rest = deadline.map { $0 - ContinuousClock.now } ?? .seconds(60)
				if rest > .zero {
					Self.sleep(for: min(rest, .seconds(60)))
				}
			}
			if let deadline, ContinuousClock.now >= deadline {
				queue.sync {
					let isShort = limit.map { printed < $0 } ?? false
					if isShort {
						Output.error("The time ran out before \(limit!) changes came.")
					}
					exit((isShort ? ExitStatus.notFound : .success).rawValue)
				}
			}
		}
	}

	/// Sleeps the calling thread for `duration` (a signal may end it early; the caller checks the time again).
	private static func sleep(for duration: Duration) {
		let (seconds, attoseconds) = duration.components
		var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
		_ = nanosleep(&request, nil)
	}

	private static func isRecent(_ identity: FileIdentity?) -> Bool {
		guard let identity else {
			return false
		}
		return identity.modificationTime > Date().timeIntervalSince1970 - recentness
	}

	/// `all` restricted to the watched keys.
	private func watched(_ all: [String: Any]) -> [String: Any] {
		guard let keys else {
			return all
		}
		return all.filter { keys.contains($0.key) }
	}

	/// Reads the file if it changed since it was last read, and prints what changed in it. On `queue`.
	private func check() {
		let current = FileIdentity.ofFile(atPath: domain.path)
		guard current != identity || isRecent else {
			return
		}
		// Foundation empties the file before it writes it again: an emptied file counts once it stays empty.
		if current?.byteCount == 0, !values.isEmpty {
			usleep(50_000)
			guard FileIdentity.ofFile(atPath: domain.path) == current else {
				return
			}
		}
		identity = current
		isRecent = Self.isRecent(current)
		let contents = domain.contents()
		switch contents {
		case .missing:
			isUnreadable = false
			printChanges(to: [:])
		case .values(let all):
			// Emptied after the check above, and so probably being written again: read again at the next check.
			if all.isEmpty, !values.isEmpty, FileIdentity.ofFile(atPath: domain.path) != current {
				isRecent = true
				return
			}
			isUnreadable = false
			printChanges(to: watched(all))
		case .corrupt(let reason):
			warnOnce(
				"The file \(domain.path) is corrupt (\(reason)); it is left as it is, and the watch waits for it to "
					+ "be rewritten.")
		case .inaccessible(let reason):
			warnOnce("\(domain.path) cannot be read (\(reason)); the watch goes on until it can.")
		}
	}

	private func warnOnce(_ message: String) {
		if !isUnreadable {
			isUnreadable = true
			Output.error(message)
		}
	}

	/// Prints each watched key whose value in `current` differs from the one last printed; exits once the count is
	/// reached.
	private func printChanges(to current: [String: Any]) {
		let names = Set(values.keys).union(current.keys).sorted()
		for name in names {
			let old = values[name]
			let new = current[name]
			if Defaults.PropertyList.isEqualOrBothAbsent(old, new) {
				continue
			}
			values[name] = new
			Output.line(line(key: name, value: new))
			printed += 1
			if let limit, printed >= limit {
				exit(ExitStatus.success.rawValue)
			}
		}
	}

	private func line(key: String, value: Any?) -> String {
		if isJSON {
			let value = value.map { "\"value\":" + JSONFormat.encode($0, pretty: false) } ?? "\"removed\":true"
			return "{\"key\":\(JSONFormat.string(key)),\(value)}"
		}
		let name = TextFormat.compact(key)
		return value.map { "\(name) = \(TextFormat.compact($0))" } ?? "\(name) (removed)"
	}
}
