import Defaults
import Foundation

#if canImport(Glibc)
	import Glibc
#endif

/// Commands for the file store's child-process tests.
///
/// A store argument is `standard` (``Defaults/FileStore/standard``), `default` (``Defaults/standardStore``) or a
/// file path. A value argument is `int:5`, `double:1.5`, `string:text` or `date:<bit pattern of the time interval
/// since the reference date>`, so that dates are compared bit for bit. Values are printed in the same form, or as
/// `missing`. Failures reported by the package are printed as `failure <reason>: <message>` on standard output.
let fileStoreCommands: [String: @Sendable ([String]) -> Int32] = [
	// file-store-write <store> <key> <value>: writes and exits with no flush; the exit flush must persist it.
	"file-store-write": { arguments in
		guard arguments.count == 3, let value = FileStoreCommand.parse(arguments[2]) else {
			return FileStoreCommand.usage("file-store-write <store> <key> <value>")
		}
		FileStoreCommand.reportFailures()
		try! FileStoreCommand.store(arguments[0]).write(value, forKey: arguments[1])
		return 0
	},
	// file-store-write-then-exit <path> <key> <microseconds>: writes, waits so that the exit may fall in the middle of
	// the write-behind flush, and exits normally.
	// file-store-write-then-wait <store> <key> <value>: writes, prints "written" and waits to be stopped by a signal.
	"file-store-write-then-wait": { arguments in
		guard arguments.count == 3, let value = FileStoreCommand.parse(arguments[2]) else {
			return FileStoreCommand.usage("file-store-write-then-wait <store> <key> <value>")
		}
		// A child spawned from a test's worker thread inherits its blocked signals; a process a service manager starts
		// has none blocked, which is the case under test.
		var terminating = sigset_t()
		sigemptyset(&terminating)
		sigaddset(&terminating, SIGTERM)
		sigprocmask(SIG_UNBLOCK, &terminating, nil)
		try! FileStoreCommand.store(arguments[0]).write(value, forKey: arguments[1])
		FileHandle.standardOutput.write(Data("written\n".utf8))
		while true {
			sleep(60)
		}
	},
	// file-store-reload-at-descriptor-limit <path> <key> <marker>: opens a store on the file, uses up every descriptor
	// the process may open and prints "exhausted"; once a file is at <marker> it gives the descriptors back, prints
	// "released", and prints "reloaded <value>" when the key's value changes (at most 20 s). An app at its descriptor limit must survive
	// another process's write (it cannot read it then) and take in the next one once it has descriptors again.
	"file-store-reload-at-descriptor-limit": { arguments in
		guard arguments.count == 3 else {
			return FileStoreCommand.usage("file-store-reload-at-descriptor-limit <path> <key> <marker>")
		}
		let store = Defaults.FileStore.at(URL(filePath: arguments[0]))
		let before = FileStoreCommand.describe(store.storedValue(forKey: arguments[1]))
		var limit = rlimit(rlim_cur: 64, rlim_max: 64)
		setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
		var held: [Int32] = []
		while case let descriptor = open("/dev/null", O_RDONLY), descriptor >= 0 {
			held.append(descriptor)
		}
		FileHandle.standardOutput.write(Data("exhausted\n".utf8))
		var status = stat()
		for _ in 0..<2_000 where stat(arguments[2], &status) != 0 {
			usleep(10_000)
		}
		held.forEach { close($0) }
		FileHandle.standardOutput.write(Data("released\n".utf8))
		for _ in 0..<2_000 {
			let now = FileStoreCommand.describe(store.storedValue(forKey: arguments[1]))
			if now != before {
				FileHandle.standardOutput.write(Data("reloaded \(now)\n".utf8))
				return 0
			}
			usleep(10_000)
		}
		return 1
	},
	// dispatch-timer-at-descriptor-limit: starts Dispatch as the package does (`DispatchStart`), uses up every
	// descriptor, then arms a Dispatch timer: prints "fired" and exits 0 when it fires within 5 s, else prints "never
	// fired" and exits 1. Dispatch makes its timer descriptor when it first arms a timer, so it must have armed one
	// while descriptors were free.
	"dispatch-timer-at-descriptor-limit": { _ in
		guard DispatchStart.isStarted else {
			FileHandle.standardOutput.write(Data("not started\n".utf8))
			return 2
		}
		var limit = rlimit(rlim_cur: 64, rlim_max: 64)
		setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
		var held: [Int32] = []
		while case let descriptor = open("/dev/null", O_RDONLY), descriptor >= 0 {
			held.append(descriptor)
		}
		let fired = DispatchSemaphore(value: 0)
		DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { fired.signal() }
		let hasFired = fired.wait(timeout: .now() + .seconds(5)) == .success
		held.forEach { close($0) }
		FileHandle.standardOutput.write(Data((hasFired ? "fired\n" : "never fired\n").utf8))
		return hasFired ? 0 : 1
	},
	// file-store-open <path>...: opens a file store on each file and prints how many keys it read: the fuzz test's
	// child, which must never crash or hang whatever the files hold.
	"file-store-open": { arguments in
		for path in arguments {
			let store = Defaults.FileStore.at(URL(filePath: path))
			FileHandle.standardOutput.write(Data("\(store.storedKeys().count)\n".utf8))
		}
		return 0
	},
	"file-store-write-then-exit": { arguments in
		guard arguments.count == 3, let pause = UInt32(arguments[2]) else {
			return FileStoreCommand.usage("file-store-write-then-exit <path> <key> <microseconds>")
		}
		FileStoreCommand.store(arguments[0]).setStoredValue(42, forKey: arguments[1])
		usleep(pause)
		exit(0)
	},
	// file-store-write-as-nobody <path> <key>: as the user `nobody` (when run as root), writes and flushes; prints
	// whether the flush wrote.
	"file-store-write-as-nobody": { arguments in
		guard arguments.count == 2 else {
			return FileStoreCommand.usage("file-store-write-as-nobody <path> <key>")
		}
		if getuid() == 0 {
			guard setgid(65_534) == 0, setuid(65_534) == 0 else {
				return 69
			}
		}
		FileStoreCommand.reportFailures()
		let store = FileStoreCommand.store(arguments[0])
		store.setStoredValue(1, forKey: arguments[1])
		print("flushed \(store.flush())")
		return 0
	},
	// file-store-read <store> <key>: prints the value.
	"file-store-read": { arguments in
		guard arguments.count >= 2 else {
			return FileStoreCommand.usage("file-store-read <store> <key> [-key value…]")
		}
		FileStoreCommand.reportFailures()
		print(FileStoreCommand.describe(FileStoreCommand.store(arguments[0]).storedValue(forKey: arguments[1])))
		return 0
	},
	// file-store-write-many <path> <prefix> <count>: writes `<prefix>-<i>` = i, flushing after each write.
	"file-store-write-many": { arguments in
		guard arguments.count == 3, let count = Int(arguments[2]) else {
			return FileStoreCommand.usage("file-store-write-many <path> <prefix> <count>")
		}
		FileStoreCommand.reportFailures()
		let store = FileStoreCommand.store(arguments[0])
		for index in 0..<count {
			store.setStoredValue(index, forKey: "\(arguments[1])-\(index)")
			guard store.flush() else {
				return 1
			}
		}
		return 0
	},
	// file-store-storm <path> <key>: rewrites a large value and flushes, forever; killed by the test.
	"file-store-storm": { arguments in
		guard arguments.count == 2 else {
			return FileStoreCommand.usage("file-store-storm <path> <key>")
		}
		FileStoreCommand.reportFailures()
		let store = FileStoreCommand.store(arguments[0])
		for index in 0..<2_000 {
			store.setStoredValue("filler \(index)", forKey: "filler-\(index)")
		}
		var round = 0
		while true {
			round += 1
			store.setStoredValue(round, forKey: arguments[1])
			store.setStoredValue(Data(repeating: UInt8(truncatingIfNeeded: round), count: 64 * 1024), forKey: "payload")
			store.flush()
		}
	},
	// file-store-await <path> <key> <value> <give-up>: waits until the key holds the value, with no flush or reload of
	// its own, and prints "seen"; exits 1 once <give-up> (a file the test creates at its limit) exists.
	"file-store-await": { arguments in
		guard arguments.count == 4, let expected = FileStoreCommand.parse(arguments[2]) else {
			return FileStoreCommand.usage("file-store-await <path> <key> <value> <give-up>")
		}
		let store = FileStoreCommand.store(arguments[0])
		let giveUp = ObservationCommand.GiveUp(arguments[3])
		print("ready")
		fflush(nil)
		while !giveUp.hasCome {
			if let value = store.storedValue(forKey: arguments[1]), Defaults.PropertyList.isEqual(value, expected) {
				print("seen")
				return 0
			}
			usleep(5_000)
		}
		print("not seen: \(FileStoreCommand.describe(store.storedValue(forKey: arguments[1])))")
		return 1
	},
	// userdefaults-write <key> <value>: writes to `UserDefaults.standard` and synchronizes.
	"userdefaults-write": { arguments in
		guard arguments.count == 2, let value = FileStoreCommand.parse(arguments[1]) else {
			return FileStoreCommand.usage("userdefaults-write <key> <value>")
		}
		UserDefaults.standard.set(value, forKey: arguments[0])
		return UserDefaults.standard.synchronize() ? 0 : 1
	},
	// userdefaults-read <key>: prints the value `UserDefaults.standard` reads.
	"userdefaults-read": { arguments in
		guard arguments.count == 1 else {
			return FileStoreCommand.usage("userdefaults-read <key>")
		}
		let value = UserDefaults.standard.object(forKey: arguments[0]).flatMap {
			try? Defaults.PropertyList.normalize($0)
		}
		print(FileStoreCommand.describe(value))
		return 0
	},
]

enum FileStoreCommand {
	static func store(_ name: String) -> any Defaults.Store {
		switch name {
		case "standard": Defaults.FileStore.standard
		case "default": Defaults.standardStore
		default: Defaults.FileStore.at(URL(filePath: name))
		}
	}

	static func parse(_ text: String) -> Any? {
		guard let colon = text.firstIndex(of: ":") else {
			return nil
		}
		let value = String(text[text.index(after: colon)...])
		switch text[..<colon] {
		case "int": return Int(value)
		case "double": return Double(value)
		case "string": return value
		case "date":
			return UInt64(value).map { Date(timeIntervalSinceReferenceDate: Double(bitPattern: $0)) }
		default: return nil
		}
	}

	static func describe(_ value: Any?) -> String {
		switch value {
		case nil: "missing"
		case let value as Bool: "bool:\(value)"
		case let value as Int: "int:\(value)"
		case let value as Double: "double:\(value)"
		case let value as String: "string:\(value)"
		case let value as Date: "date:\(value.timeIntervalSinceReferenceDate.bitPattern)"
		case let value as Data: "data:\(value.count)"
		case let value as [Any]: "array:" + value.map { describe($0) }.joined(separator: ",")
		case let value?: "other:\(type(of: value))"
		}
	}

	static func reportFailures() {
		Defaults.failureHandler = { failure in
			print("failure \(failure.reason): \(failure.message)")
			fflush(nil)
		}
	}

	static func usage(_ text: String) -> Int32 {
		FileHandle.standardError.write(Data("usage: DefaultsTestHelper \(text)\n".utf8))
		return 64
	}
}
