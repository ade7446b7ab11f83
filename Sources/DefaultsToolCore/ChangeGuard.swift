import Synchronization

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// Keeps a terminating signal from ending the command in the middle of a change, where the file store's own
/// termination flush would write the verb half done (an import with half its keys removed).
///
/// The command handles SIGTERM, SIGINT and SIGHUP itself (so the store leaves them alone): outside a change, the
/// signal's default action ends the command at once, as if nothing were handled; from the moment a verb opens a
/// store until it has flushed, the signal waits, and then ends the command by its default action, with the whole
/// change on disk. `watch` puts handlers of its own in place.
enum ChangeGuard {
	static let signals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

	/// Installs the handlers, before any store is opened.
	static func install() {
		_ = state.load(ordering: .relaxed)
		for number in signals {
			signal(number) { number in
				ChangeGuard.handle(number)
			}
		}
	}

	/// Marks the start of a change: a signal from now on waits for ``end()``.
	static func begin() {
		_ = state.compareExchange(expected: idle, desired: changing, ordering: .sequentiallyConsistent)
	}

	/// Marks the end of a change (or of a verb that made none); a signal that came meanwhile ends the command now.
	static func end() {
		let previous = state.exchange(idle, ordering: .sequentiallyConsistent)
		if previous > changing {
			endBy(previous - changing)
		}
	}

	/// The handler: async-signal-safe calls and atomics only.
	private static func handle(_ number: Int32) {
		let (isDeferred, current) = state.compareExchange(
			expected: changing, desired: changing + number, ordering: .sequentiallyConsistent)
		if !isDeferred, current == idle {
			endBy(number)
		}
	}

	private static func endBy(_ number: Int32) {
		signal(number, SIG_DFL)
		var set = sigset_t()
		sigemptyset(&set)
		sigaddset(&set, number)
		pthread_sigmask(SIG_UNBLOCK, &set, nil)
		raise(number)
	}

	// Computed, not stored: a stored static may be initialised lazily (through `swift_once`, which is not
	// async-signal-safe) on its first read, and that read may be the handler's.
	private static var idle: Int32 { 0 }
	private static var changing: Int32 { 1 }
}

/// `idle`, `changing`, or `changing` plus the number of a signal that came during the change.
private let state = Atomic<Int32>(0)
