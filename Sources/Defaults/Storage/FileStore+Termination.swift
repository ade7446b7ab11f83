import Foundation

#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

extension Defaults.FileStore {
	/// Writes the pending changes of every file store of the process now.
	///
	/// The package flushes by itself at normal exit and, where the app has left these signals at their default
	/// action, when the process is stopped with `SIGTERM` (how service managers stop programs), `SIGINT` (Ctrl-C) or
	/// `SIGHUP`. An app that handles those signals itself calls this from its handler's follow-up work (not from the
	/// signal handler itself: flushing does I/O and takes locks):
	///
	/// ```swift
	/// let termination = DispatchSource.makeSignalSource(signal: SIGTERM)
	/// termination.setEventHandler {
	/// 	Defaults.FileStore.flushAll()
	/// 	exit(0)
	/// }
	/// ```
	///
	/// - Returns: `false` if any store could not write its file; its changes stay pending.
	@discardableResult
	public static func flushAll() -> Bool {
		var isWritten = true
		for store in FileStoreRegistry.allStores() {
			store.waitForFlushUnderWay()
			if store.hasPendingChanges, !store.flush() {
				isWritten = false
			}
		}
		return isWritten
	}
}

/// Flushes every file store before the default action of a terminating signal ends the process.
///
/// A signal handler may only do async-signal-safe work, so the handler writes the signal's number to a pipe, and a
/// thread of its own flushes, puts the default action back and sends the signal again: the process still ends by
/// that signal, with the exit status that says so. Only signals whose action is still the default are handled, so
/// an app's own handlers are never replaced; and a handler (unlike an ignored signal) is reset for programs the
/// process starts, so children keep the default action.
enum TerminationFlush {
	static let signals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

	private static let installation: Void = {
		var descriptors: [Int32] = [-1, -1]
		guard pipe(&descriptors) == 0 else {
			return
		}
		_ = fcntl(descriptors[0], F_SETFD, FD_CLOEXEC)
		_ = fcntl(descriptors[1], F_SETFD, FD_CLOEXEC)
		terminationPipe = descriptors[1]
		let reader = descriptors[0]
		let thread = Thread {
			var number: UInt8 = 0
			while read(reader, &number, 1) != 1 {
				guard errno == EINTR else {
					return
				}
			}
			Defaults.FileStore.flushAll()
			signal(Int32(number), SIG_DFL)
			kill(getpid(), Int32(number))
		}
		thread.name = "Defaults.FileStore termination flush"
		thread.start()
		#if canImport(Glibc)
			for number in signals {
				var current = sigaction()
				guard sigaction(number, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil else {
					continue
				}
				var action = sigaction()
				action.__sigaction_handler.sa_handler = { number in
					var byte = UInt8(truncatingIfNeeded: number)
					_ = write(terminationPipe, &byte, 1)
				}
				sigemptyset(&action.sa_mask)
				action.sa_flags = SA_RESTART
				_ = sigaction(number, &action, nil)
			}
		#endif
	}()

	/// Installs the handlers once; signals already handled or ignored by the app are left alone.
	static func install() {
		_ = installation
	}
}

/// The write end of the pipe the signal handler writes to; set once, before any handler is installed.
nonisolated(unsafe) private var terminationPipe: Int32 = -1
