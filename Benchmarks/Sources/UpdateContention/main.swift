import Defaults
import Foundation

// Updates per second from several processes on one settings file, each incrementing the same key with
// `Defaults.update` for a fixed time: the file store's counterpart of `Benchmarks/sqlite-contention.py`.
//
//     UpdateContention <processes> <seconds> <file>
//
// Prints the updates each process made, the total, updates per second, and whether the file ends on the exact total
// (it must: no update may be lost). The children are this program again (`child <file> <seconds> <start>`), started
// together by a start file.

let arguments = Array(CommandLine.arguments.dropFirst())

func fail(_ message: String) -> Never {
	FileHandle.standardError.write(Data((message + "\n").utf8))
	exit(64)
}

if arguments.first == "child" {
	guard arguments.count == 4, let seconds = Double(arguments[2]) else {
		fail("usage: UpdateContention child <file> <seconds> <start>")
	}
	let key = Defaults.Key<Int>("counter", default: 0, suite: Defaults.FileStore.at(URL(filePath: arguments[1])))
	while !FileManager.default.fileExists(atPath: arguments[3]) {
		usleep(200)
	}
	let deadline = Date().addingTimeInterval(seconds)
	var updates = 0
	while Date() < deadline {
		try! Defaults.update(key) { $0 += 1 }
		updates += 1
	}
	print(updates)
	exit(0)
}

guard arguments.count == 3, let processes = Int(arguments[0]), let seconds = Double(arguments[1]) else {
	fail("usage: UpdateContention <processes> <seconds> <file>")
}
let file = URL(filePath: arguments[2])
let start = file.deletingLastPathComponent().appending(path: file.lastPathComponent + ".start")
try? FileManager.default.removeItem(at: file)
try? FileManager.default.removeItem(at: start)
let children = (0..<processes).map { _ in
	let child = Process()
	child.executableURL = URL(filePath: "/proc/self/exe")
	child.arguments = ["child", file.path, "\(seconds)", start.path]
	let output = Pipe()
	child.standardOutput = output
	try! child.run()
	return (child, output)
}
// Let every child open its store before the clock starts.
usleep(300_000)
// The children wait for this file: without it they would wait out their own deadline.
guard FileManager.default.createFile(atPath: start.path, contents: nil) else {
	fatalError("could not create the start file \(start.path)")
}
var total = 0
for (child, output) in children {
	let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
	child.waitUntilExit()
	let updates = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
	print("process \(child.processIdentifier): \(updates) updates")
	total += updates
}
let data = try! Data(contentsOf: file)
let stored = (try! PropertyListSerialization.propertyList(from: data, format: nil) as! [String: Any])["counter"] as! Int
print("total \(total) updates in \(seconds) s: \(Int(Double(total) / seconds)) updates/s; file holds \(stored)")
try? FileManager.default.removeItem(at: start)
exit(stored == total ? 0 : 1)
