import Defaults
import Foundation

// One operation in a loop, for valgrind's callgrind: instructions and calls per operation do not move with the
// machine's load, as the harness's times do. Run it twice with different counts and divide the difference by the
// difference of the counts, so that the process's start and end (loading, the store's setup) drop out:
//
//     valgrind --tool=callgrind --callgrind-out-file=/tmp/a.out OperationCost <operation> 200
//     valgrind --tool=callgrind --callgrind-out-file=/tmp/b.out OperationCost <operation> 1200
//     # (Ir of b - Ir of a) / 1000 = instructions per operation; callgrind_annotate names where they go
//
// Operations:
// - `read-int`: `Defaults[key]` of an `Int` key of a file store (the cached read); add `--dump-instr=yes` to see the
//   loop's instructions with `callgrind_annotate --auto=yes`, or disassemble `readLoop`;
// - `write-struct-file`, `write-struct-memory`: `Defaults[key] = Profile.sample` (a Codable struct, JSON text) to a
//   file store or an in-memory store;
// - `encode-struct`: `JSONEncoder().encode` of the same struct stored in a `[String: Any]`, the `Write struct`
//   baseline of the benchmarks; `encode-struct-sorted`: the same with `.sortedKeys`, the library's JSON form.

/// The struct of the `Write struct` benchmarks (`Profile` and `Samples.profile` of `BenchmarkSupport`, which this
/// program does not import: it brings the harness's malloc interposer, which valgrind cannot load).
struct Profile: Codable, Equatable, Sendable, Defaults.Serializable {
	var name: String
	var age: Int
	var email: String
	var isAdmin: Bool
	var score: Double

	static let sample = Profile(name: "Ada Lovelace", age: 36, email: "ada@example.com", isAdmin: true, score: 99.5)
}

/// Takes the value so that the loop cannot be dropped.
@inline(never) func consume<T>(_ value: T) {
	withExtendedLifetime(value) {}
}

/// The read loop, a function of its own so that its instructions can be found by name.
@inline(never) func readLoop(_ key: Defaults.Key<Int>, count: Int) {
	for _ in 0..<count {
		consume(Defaults[key])
	}
}

let operations = ["read-int", "write-struct-file", "write-struct-memory", "encode-struct", "encode-struct-sorted"]
let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
	FileHandle.standardError.write(Data("usage: OperationCost <operation> <count>\n".utf8))
	exit(64)
}
// Before the folder exists: `exit` skips the `defer` below.
guard operations.contains(arguments[1]) else {
	FileHandle.standardError.write(Data("unknown operation \(arguments[1]); known: \(operations)\n".utf8))
	exit(64)
}
let folder = FileManager.default.temporaryDirectory.appending(path: "operation-cost-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
var openedFileStore: Defaults.FileStore?
// The store's changes are written before the folder goes: the store's exit flush (an `atexit` handler, after this)
// writes whatever is still pending, and wrote the file into a new folder of the same name after the removal.
defer {
	openedFileStore?.flush()
	try? FileManager.default.removeItem(at: folder)
}
@MainActor func fileStore() -> Defaults.FileStore {
	let store = Defaults.FileStore.at(folder.appending(path: "settings.plist"))
	openedFileStore = store
	return store
}

switch arguments[1] {
case "read-int":
	let key = Defaults.Key<Int>("value", default: 7, suite: fileStore())
	Defaults[key] = 42
	readLoop(key, count: count)
case "write-struct-file", "write-struct-memory":
	let store: any Defaults.Store = arguments[1] == "write-struct-file" ? fileStore() : Defaults.InMemoryStore()
	let key = Defaults.Key<Profile>("value", default: Profile.sample, suite: store)
	for _ in 0..<count {
		Defaults[key] = Profile.sample
	}
	store.flush()
case "encode-struct", "encode-struct-sorted":
	var values: [String: Any] = [:]
	for _ in 0..<count {
		let encoder = JSONEncoder()
		if arguments[1] == "encode-struct-sorted" {
			encoder.outputFormatting = .sortedKeys
		}
		values["value"] = String(decoding: try! encoder.encode(Profile.sample), as: UTF8.self)
	}
	consume(values.count)
default:
	preconditionFailure("an operation of `operations` has no case")
}
