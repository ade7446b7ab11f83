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
