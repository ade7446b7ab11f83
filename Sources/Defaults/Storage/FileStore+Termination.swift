import Foundation
import Synchronization

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
			if store.hasPendingChangesOnceNoFlushIsUnderWay, !store.flush() {
				isWritten = false
			}
		}
		return isWritten
	}

	/// Flushes every store as the process ends (at exit, or for a terminating signal): each store gets one try, and
	/// a store whose try fails reports which changes are lost, since no later try will come, and forgets them, so
	/// that the next handler of the same exit does not wait for the same lock again.
	static func flushAllBeforeTheEnd() {
		TerminationFlush.isEnding.store(true, ordering: .sequentiallyConsistent)
		for store in FileStoreRegistry.allStores() where store.hasPendingChangesOnceNoFlushIsUnderWay {
			let names = store.flushBeforeTheEnd()
			guard !names.isEmpty else {
				continue
			}
			let shown = names.prefix(20).map { "\"\($0)\"" }.joined(separator: ", ")
			let more = names.count > 20 ? " and \(names.count - 20) more" : ""
			Defaults.report(
				store.storageFailure(
					"The process is ending and the file \(store.path) could not be written, so the changes to "
						+ "\(names.count == 1 ? "the key" : "the \(names.count) keys") \(shown)\(more) are lost."))
		}
		// At a signal nothing runs after this; at `exit()`, sync's exit push (which may run before or after this,
		// whichever of the two exit handlers was registered last runs first) ends the steps itself once its pushes are
		// done.
		if TerminationFlush.pendingSignal != nil {
			for store in FileStoreRegistry.allStores() {
				store.endLockedSteps()
			}
		}
	}
}

/// Flushes every file store before the default action of a terminating signal ends the process.
///
/// A signal handler may only do async-signal-safe work, so the handler notes the signal and writes its number to a
/// pipe, and a thread of its own flushes, puts the default action back and sends the signal again: the process still
/// ends by that signal, with the exit status that says so. Only signals whose action is still the default are
/// handled, so an app's own handlers are never replaced; and a handler (unlike an ignored signal) is reset for
/// programs the process starts, so children keep the default action.
///
/// What makes it hold under load:
/// - Nothing in the handler waits: the pipe's write end is non-blocking, and a full pipe is fine, since one byte
///   already says that the process is ending.
/// - From the moment the handler runs, writes to file stores no longer change memory: a thread that writes waits
///   for the end instead (the check is inside the store's lock, so every write that got in before is in the flush).
///   So whatever the app wrote before the signal reaches the disk, and nothing it writes after can be half there.
/// - An `exit()` of the app racing the flush does not end the process with its own status: the exit flush sees the
///   signal and finishes the termination itself, ending the process by the signal.
/// - The pipe's descriptors are 3 or above, even when the process started with 0-2 closed, so nothing written to
///   standard output or error reaches the reader, which besides takes only the numbers of the signals it handles.
/// - In a child made by `fork()` without `exec`, which has the handler but not the thread, the handler ends the
///   child by the signal's default action at once and never writes to the parent's pipe.
enum TerminationFlush {
	static let signals: [Int32] = [SIGTERM, SIGINT, SIGHUP]

	private static let installation: Void = {
		installingProcess.store(getpid(), ordering: .sequentiallyConsistent)
		_ = terminatingSignal.load(ordering: .relaxed)
		guard let (reader, writer) = makePipe() else {
			return
		}
		terminationPipe.store(writer, ordering: .sequentiallyConsistent)
		// Runs before the registry's exit flush (registered earlier, so run later): an `exit()` that races a signal's
		// flush, or that a signal interrupts, ends the process by the signal, after everything is written.
		atexit {
			if let number = TerminationFlush.pendingSignal {
				TerminationFlush.finish(number)
			}
			Defaults.FileStore.flushAllBeforeTheEnd()
			if let number = TerminationFlush.pendingSignal {
				TerminationFlush.finish(number)
			}
		}
		let thread = Thread {
			var number: UInt8 = 0
			while true {
				let count = read(reader, &number, 1)
				if count == 1, signals.contains(Int32(number)) {
					finish(Int32(number))
				}
				guard count == 1 || (count < 0 && errno == EINTR) else {
					return
				}
			}
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
					handle(number)
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

	/// The signal handler: async-signal-safe calls and atomics only, and nothing that waits.
	private static func handle(_ number: Int32) {
		let savedError = errno
		defer { errno = savedError }
		guard getpid() == installingProcess.load(ordering: .relaxed) else {
			// A forked child: the flushing thread is the parent's; end the child as if nothing were handled.
			signal(number, SIG_DFL)
			raise(number)
			return
		}
		_ = terminatingSignal.compareExchange(expected: 0, desired: number, ordering: .sequentiallyConsistent)
		var byte = UInt8(truncatingIfNeeded: number)
		// Non-blocking: a full pipe (a storm of signals) fails with EAGAIN, and one byte in it is enough.
		_ = write(terminationPipe.load(ordering: .relaxed), &byte, 1)
	}

	/// A pipe whose descriptors are 3 or above and closed on `exec`, with a non-blocking write end.
	private static func makePipe() -> (reader: Int32, writer: Int32)? {
		var descriptors: [Int32] = [-1, -1]
		guard pipe(&descriptors) == 0 else {
			return nil
		}
		// Closed on `exec`, and, with descriptors 0-2 closed at launch (`pipe` returns them), moved above them.
		descriptors.forEach { _ = fcntl($0, F_SETFD, FD_CLOEXEC) }
		let moved = descriptors.map(movedAboveStandardStreams)
		guard moved.allSatisfy({ $0 >= 3 }) else {
			moved.filter { $0 >= 0 }.forEach { close($0) }
			return nil
		}
		let flags = fcntl(moved[1], F_GETFL)
		_ = fcntl(moved[1], F_SETFL, flags | O_NONBLOCK)
		return (moved[0], moved[1])
	}

	/// Flushes every store and ends the process by `number`'s default action. Called by the flushing thread, and by
	/// the exit flush when the app's `exit()` races it; both may run it at once.
	static func finish(_ number: Int32) -> Never {
		Thread.current.threadDictionary[finishingThreadKey] = true
		Defaults.FileStore.flushAllBeforeTheEnd()
		signal(number, SIG_DFL)
		var unblocked = sigset_t()
		sigemptyset(&unblocked)
		sigaddset(&unblocked, number)
		pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
		raise(number)
		// Only reached if the app put a handler of its own in place meanwhile: end with the shell's status for it.
		_exit(128 + number)
	}

	/// The signal that is ending the process, if one is: set by the handler.
	static var pendingSignal: Int32? {
		let number = terminatingSignal.load(ordering: .sequentiallyConsistent)
		return number == 0 ? nil : number
	}

	/// Whether file stores still take writes: not once a terminating signal came, but for the threads that flush for
	/// it (an observer they call may write). Called inside a store's lock, so one atomic load in the common case.
	@inline(__always)
	static var acceptsWrites: Bool {
		terminatingSignal.load(ordering: .sequentiallyConsistent) == 0 || isFinishingThread
	}

	/// Kept out of line: every write inlines the load above, and only a write after a signal gets here.
	@inline(never)
	private static var isFinishingThread: Bool {
		Thread.current.threadDictionary[finishingThreadKey] != nil
	}

	/// Where a write refused by ``acceptsWrites`` waits: the process ends by the signal within moments. Should the
	/// flushing thread not get there (it may wait 2 s for each store's lock), the waiting thread ends it itself.
	static func waitForTheEnd() -> Never {
		for _ in 0..<30 {
			sleep(1)
		}
		finish(pendingSignal ?? SIGTERM)
	}

	private static let finishingThreadKey = "Defaults.FileStore.terminationFlush"

	/// Set once the process is ending (the exit flush or a terminating signal's has begun): a failed flush then
	/// schedules no retry.
	static let isEnding = Atomic<Bool>(false)
}

/// The write end of the pipe the signal handler writes to; set once, before any handler is installed.
private let terminationPipe = Atomic<Int32>(-1)
/// The process that installed the handlers: a forked child has the handlers but another process id.
private let installingProcess = Atomic<Int32>(0)
/// The first terminating signal the handler saw; 0 before any.
private let terminatingSignal = Atomic<Int32>(0)
