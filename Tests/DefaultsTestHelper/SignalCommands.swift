import Defaults
import Foundation

#if canImport(Glibc)
	import Glibc
#endif

/// Commands for the termination-signal tests: each leaves a store with a pending or flushing write and waits to be
/// stopped by the test, which checks how the process ended and what reached the file. Every command waits forever
/// at the end; the test stops it by its process id.
let signalCommands: [String: @Sendable ([String]) -> Int32] = [
	// signal-storm-during-flush <path>: flushes again and again while the test holds the file's lock and sends a
	// storm of SIGTERMs. Only the main thread takes SIGTERM, and the process's pipes are shrunk to one page, so that
	// a handler that blocks on a full pipe blocks the thread holding the store's flush lock.
	"signal-storm-during-flush": { arguments in
		guard arguments.count == 1 else {
			return FileStoreCommand.usage("signal-storm-during-flush <path>")
		}
		SignalCommand.setTerminationBlocked(true)
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		store.setStoredValue(0, forKey: "round")
		guard store.flush() else {
			return 1
		}
		SignalCommand.shrinkPipes()
		SignalCommand.setTerminationBlocked(false)
		SignalCommand.say("ready")
		var round = 0
		while true {
			round += 1
			store.setStoredValue(round, forKey: "round")
			store.flush()
		}
	},
	// signal-with-closed-standard-descriptors <path> <report>: run with descriptors 0-2 closed. Writes a value, then
	// writes "1" and a stray byte to descriptors 0-2 (as a program writing to its closed standard error would), writes
	// which of descriptors 0-2 are pipes into <report> and waits.
	"signal-with-closed-standard-descriptors": { arguments in
		guard arguments.count == 2 else {
			return 64
		}
		SignalCommand.setTerminationBlocked(false)
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		store.setStoredValue(7, forKey: "k")
		store.flush()
		let pipes = (0...2).filter(SignalCommand.isPipe)
		for descriptor: Int32 in 0...2 where pipes.contains(descriptor) {
			var bytes: [UInt8] = [UInt8(ascii: "1"), 0xFF, UInt8(SIGKILL)]
			_ = write(descriptor, &bytes, bytes.count)
		}
		// The store's watch and its folder's files (the lock) are the package's too, and must stay off 0-2 as well.
		let folder = URL(filePath: arguments[0]).deletingLastPathComponent().path
		let others = (0...2).filter { (descriptor: Int32) in
			let target =
				(try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")) ?? ""
			return target.contains("inotify") || target.hasPrefix(folder)
		}
		let report = "pipes below 3: \(pipes)\nwatch or settings files below 3: \(others)\n"
		_ = FileManager.default.createFile(atPath: arguments[1], contents: Data(report.utf8))
		while true {
			sleep(60)
		}
	},
	// signal-during-writes <path> <progress>: writes `round` = 1, 2, 3 … as fast as it can into a store of 5,000 keys
	// (so that a flush takes a while), recording in <progress> (8 bytes) each round whose write has returned.
	"signal-during-writes": { arguments in
		guard arguments.count == 2 else {
			return FileStoreCommand.usage("signal-during-writes <path> <progress>")
		}
		SignalCommand.setTerminationBlocked(false)
		FileStoreCommand.reportFailures()
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		for index in 0..<5_000 {
			store.setStoredValue("filler \(index)", forKey: "filler-\(index)")
		}
		let progress = open(arguments[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
		var round = 0
		while true {
			round += 1
			store.setStoredValue(round, forKey: "round")
			_ = pwrite(progress, &round, MemoryLayout<Int>.size, 0)
			if round == 1 {
				SignalCommand.say("ready")
			}
		}
	},
	// signal-then-exit <path> <marker>: leaves 20,000 keys pending (a slow flush) and calls `exit(0)` as soon as
	// <marker> exists: the test creates it right after it sends SIGTERM, so the exit races the termination flush.
	"signal-then-exit": { arguments in
		guard arguments.count == 2 else {
			return FileStoreCommand.usage("signal-then-exit <path> <marker>")
		}
		SignalCommand.setTerminationBlocked(false)
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		for index in 0..<20_000 {
			store.setStoredValue(index, forKey: "key-\(index)")
		}
		SignalCommand.say("ready")
		while access(arguments[1], F_OK) != 0 {
			usleep(100)
		}
		exit(0)
	},
	// exec-with-signals-unblocked <program> [arguments…]: runs the program in this process with the termination
	// signals unblocked, as a service manager starts it (a test's worker thread hands its blocked signals down).
	"exec-with-signals-unblocked": { arguments in
		guard let program = arguments.first else {
			return FileStoreCommand.usage("exec-with-signals-unblocked <program> [arguments…]")
		}
		SignalCommand.setTerminationBlocked(false)
		var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
		execv(program, &argv)
		return 69
	},
	// signal-after-fork <path>: writes a value, forks without exec; the child writes and flushes a value of its own
	// and waits; the parent prints the child's id, waits for it to end, prints how it ended, and waits.
	"signal-after-fork": { arguments in
		guard arguments.count == 1 else {
			return FileStoreCommand.usage("signal-after-fork <path>")
		}
		SignalCommand.setTerminationBlocked(false)
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		store.setStoredValue(1, forKey: "parent")
		guard store.flush() else {
			return 1
		}
		// Past the write-behind flush and the reload the file's watch starts after it: a lock another thread holds at the
		// moment of `fork()` stays held in the child, as with any mutex.
		usleep(300_000)
		let child = SignalCommand.fork()
		if child == 0 {
			store.setStoredValue(2, forKey: "child")
			SignalCommand.say("child flushed \(store.flush())")
			while true {
				sleep(60)
			}
		}
		SignalCommand.say("child \(child)")
		var status: Int32 = 0
		while waitpid(child, &status, 0) == -1, errno == EINTR {}
		let signal = status & 0x7f
		SignalCommand.say(signal == 0 ? "child exited \((status >> 8) & 0xff)" : "child signaled \(signal)")
		while true {
			sleep(60)
		}
	},
]

enum SignalCommand {
	/// Blocks or unblocks the termination signals in the calling thread (and in threads it starts afterwards).
	static func setTerminationBlocked(_ isBlocked: Bool) {
		var set = sigset_t()
		sigemptyset(&set)
		for number in [SIGTERM, SIGINT, SIGHUP] {
			sigaddset(&set, number)
		}
		pthread_sigmask(isBlocked ? SIG_BLOCK : SIG_UNBLOCK, &set, nil)
	}

	/// Prints `line` at once: the test reads the output file while the process runs.
	static func say(_ line: String) {
		print(line)
		fflush(nil)
	}

	static func isPipe(_ descriptor: Int32) -> Bool {
		var status = stat()
		return fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFIFO
	}

	/// Shrinks every pipe of the process to one page, so that a few thousand bytes fill it.
	static func shrinkPipes() {
		let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
		for descriptor in descriptors.compactMap(Int32.init) where isPipe(descriptor) {
			_ = fcntl(descriptor, 1031 /* F_SETPIPE_SZ */, 4096)
		}
	}

	/// `fork()`, which Swift does not import.
	static func fork() -> pid_t {
		typealias Fork = @convention(c) () -> pid_t
		// `nil` is RTLD_DEFAULT on glibc.
		guard let symbol = dlsym(nil, "fork") else {
			return -1
		}
		return unsafeBitCast(symbol, to: Fork.self)()
	}
}
