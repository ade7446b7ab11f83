#if canImport(Glibc)
	import Glibc
#elseif canImport(Musl)
	import Musl
#elseif canImport(Darwin)
	import Darwin
#endif

/// `descriptor` moved to 3 or above (closed on `exec`) when it is 0, 1 or 2, else `descriptor` itself; -1 on failure.
///
/// ```swift
/// let watcher = movedAboveStandardStreams(inotify_init1(Int32(IN_CLOEXEC)))
/// ```
///
/// A process started with its standard streams closed gets them back as the next descriptors it opens. Any
/// descriptor the package keeps must stay off them: whatever the app then writes to standard error would land in the
/// package's file, pipe or watch.
func movedAboveStandardStreams(_ descriptor: Int32) -> Int32 {
	guard descriptor >= 0, descriptor <= 2 else {
		return descriptor
	}
	let moved = fcntl(descriptor, F_DUPFD_CLOEXEC, 3)
	let error = errno
	close(descriptor)
	errno = error
	return moved
}

/// Writes `text` to standard error with `write(2)`, giving up quietly when it cannot take it.
///
/// ```swift
/// writeToStandardError("Defaults: the file could not be written\n")
/// ```
///
/// `FileHandle.write(_:)` traps on a failed write, and standard error fails exactly when storage does: a daemon
/// runs with it closed, and a log on a full disk refuses the line that says the disk is full. A message that cannot
/// be written is lost; the process goes on. `SIGPIPE` from a reader that has gone is kept from ending the process:
/// it is blocked on this thread for the write, and taken off again if the write raised it.
package func writeToStandardError(_ text: String) {
	var pipeSignal = sigset_t()
	sigemptyset(&pipeSignal)
	sigaddset(&pipeSignal, SIGPIPE)
	var pending = sigset_t()
	sigpending(&pending)
	let wasPending = sigismember(&pending, SIGPIPE) == 1
	var previousMask = sigset_t()
	pthread_sigmask(SIG_BLOCK, &pipeSignal, &previousMask)
	defer { pthread_sigmask(SIG_SETMASK, &previousMask, nil) }
	let isPipeBroken = Array(text.utf8).withUnsafeBytes { !writeAll($0, to: STDERR_FILENO) && errno == EPIPE }
	if isPipeBroken, !wasPending {
		#if os(Linux)
			var noWait = timespec()
			_ = sigtimedwait(&pipeSignal, nil, &noWait)
		#else
			var taken: Int32 = 0
			sigpending(&pending)
			if sigismember(&pending, SIGPIPE) == 1 {
				_ = sigwait(&pipeSignal, &taken)
			}
		#endif
	}
}

/// Writes every byte of `bytes` to `descriptor` with `write(2)`, again after a partial write or an interruption;
/// `false`, with `errno` saying why, when the descriptor refuses them.
///
/// ```swift
/// let isWritten = Array("done\n".utf8).withUnsafeBytes { writeAll($0, to: STDOUT_FILENO) }
/// ```
package func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Bool {
	var offset = 0
	while offset < bytes.count {
		let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
		if count < 0 {
			guard errno == EINTR else {
				return false
			}
			continue
		}
		offset += count
	}
	return true
}
