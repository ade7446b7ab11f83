import Defaults
import Foundation

// Resident memory of a file store beside a `[String: Any]` holding the same values, each case measured in a fresh
// process (this program again), so that what one case allocated and freed cannot count for another:
//
//     ResidentMemory [keys ...]           (default: 10000 100000)
//
// For N keys a case holds 2N values: `name<i>` a string, `count<i>` an integer. Every child prints its resident set
// (VmRSS of /proc/self/status, in KB) before and after it builds its case; the difference is the case's cost:
// - `dictionary`: a `[String: Any]` filled one value at a time;
// - `store, written`: a `Defaults.FileStore` in a new file, every value written with `write(_:forKey:)`, then
//   `flush()` (the state of an app that wrote its settings);
// - `store, loaded`: a fresh process opening the file that case left and reading one value (an app's start);
// - `empty store`: a store opened on a missing file and one `Defaults.Key` read: the fixed cost.
// Every child waits 300 ms after its work, so that a scheduled flush has run when it measures.

/// A field of /proc/self/status in KB: `VmRSS` (everything resident, the pages of code a case runs included) or
/// `RssAnon` (the heap and stacks only).
func residentKilobytes(_ field: String = "VmRSS") -> Int {
	let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
	for line in status.split(separator: "\n") where line.hasPrefix(field + ":") {
		return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
	}
	return -1
}

func fail(_ message: String) -> Never {
	FileHandle.standardError.write(Data((message + "\n").utf8))
	exit(64)
}

func settle() {
	usleep(300_000)
}

let arguments = Array(CommandLine.arguments.dropFirst())

if arguments.first == "child" {
	guard arguments.count == 4, let count = Int(arguments[2]) else {
		fail("usage: ResidentMemory child <case> <keys> <file>")
	}
	let file = URL(filePath: arguments[3])
	// Foundation, Dispatch and the libraries are loaded and touched before the first measure.
	_ = Date().description
	DispatchQueue.global().sync {}
	let before = residentKilobytes()
	let anonymousBefore = residentKilobytes("RssAnon")
	switch arguments[1] {
	case "dictionary":
		var values: [String: Any] = [:]
		for index in 0..<count {
			values["name\(index)"] = "value \(index)"
			values["count\(index)"] = index
		}
		settle()
		print(before, residentKilobytes(), anonymousBefore, residentKilobytes("RssAnon"), values.count)
	case "written":
		let store = Defaults.FileStore.at(file)
		for index in 0..<count {
			try! store.write("value \(index)", forKey: "name\(index)")
			try! store.write(index, forKey: "count\(index)")
		}
		store.flush()
		settle()
		print(before, residentKilobytes(), anonymousBefore, residentKilobytes("RssAnon"), store.storedKeys().count)
	case "loaded":
		let store = Defaults.FileStore.at(file)
		let key = Defaults.Key<Int>("count0", default: -1, suite: store)
		let value = Defaults[key]
		settle()
		print(before, residentKilobytes(), anonymousBefore, residentKilobytes("RssAnon"), value)
	case "empty":
		let store = Defaults.FileStore.at(file)
		let key = Defaults.Key<Int>("count0", default: -1, suite: store)
		let value = Defaults[key]
		settle()
		print(before, residentKilobytes(), anonymousBefore, residentKilobytes("RssAnon"), value)
	default:
		fail("unknown case \(arguments[1])")
	}
	exit(0)
}

let counts =
	arguments.isEmpty
	? [10_000, 100_000]
	: arguments.map { argument -> Int in
		guard let count = Int(argument) else {
			fail("not a number: \(argument)")
		}
		return count
	}
let folder = FileManager.default.temporaryDirectory.appending(path: "resident-memory-\(UUID().uuidString)")
try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }

/// Resident and anonymous KB before and after, from a fresh process.
func measure(_ kind: String, keys: Int, file: URL) -> (before: Int, after: Int, anonymous: Int) {
	let child = Process()
	child.executableURL = URL(filePath: "/proc/self/exe")
	child.arguments = ["child", kind, "\(keys)", file.path]
	let output = Pipe()
	child.standardOutput = output
	try! child.run()
	let data = output.fileHandleForReading.readDataToEndOfFile()
	child.waitUntilExit()
	let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
	guard child.terminationStatus == 0, fields.count >= 4 else {
		fail("the child for \(kind) failed: \(String(decoding: data, as: UTF8.self))")
	}
	return (fields[0], fields[1], fields[3] - fields[2])
}

func row(_ cells: [String]) {
	print("| " + cells.joined(separator: " | ") + " |")
}

let empty = measure("empty", keys: 0, file: folder.appending(path: "empty.plist"))
print(
	"Fixed cost of an empty store (opened on a missing file, one key read): \(empty.after - empty.before) KB resident, "
		+ "\(empty.anonymous) KB of it heap and stacks")
print("(resident before \(empty.before) KB, after \(empty.after) KB; target under 256 KB)")
print()
row([
	"keys (values)", "[String: Any]", "store, written and flushed", "ratio", "store, loaded in a new process", "ratio",
	"of it heap and stacks (dictionary, written, loaded)",
])
row(["---", "---:", "---:", "---:", "---:", "---:", "---"])
for keys in counts {
	let file = folder.appending(path: "values-\(keys).plist")
	let dictionary = measure("dictionary", keys: keys, file: file)
	let written = measure("written", keys: keys, file: file)
	let loaded = measure("loaded", keys: keys, file: file)
	let base = dictionary.after - dictionary.before
	let writtenCost = written.after - written.before
	let loadedCost = loaded.after - loaded.before
	row([
		"\(keys) (\(2 * keys))", "\(base) KB", "\(writtenCost) KB",
		String(format: "%.2fx", Double(writtenCost) / Double(max(base, 1))), "\(loadedCost) KB",
		String(format: "%.2fx", Double(loadedCost) / Double(max(base, 1))),
		"\(dictionary.anonymous), \(written.anonymous), \(loaded.anonymous) KB",
	])
}
