import Foundation
import Synchronization
import Testing

@testable import Defaults

#if canImport(Glibc)
	import Glibc
#endif

/// Deterministic fuzzing of what a settings path can lead to: chains of links of random length (absolute, relative,
/// through `..`), loops, devices, FIFOs, kernel files without a size, files that keep growing. A store opened on
/// each, written and flushed, must never hang, never replace what it did not read, and leave every link a link.
@Suite(.scaledTimeLimit(minutes: FuzzRun.minutes)) struct FileShapeFuzzTests {
	/// 40 in the suite; `.ci/fuzz` raises it with `DEFAULTS_FUZZ_CASES`, up to 2,000 (each case keeps a store and a
	/// watched folder for the rest of the run).
	static let caseCount = min(2_000, max(40, FuzzTests.caseCount / 500))

	/// What the end of a chain is.
	enum End: CaseIterable {
		case settings, garbage, missing, device, fifo, pagemap, loop
	}

	@Test func linkChainsLoopsDevicesAndKernelFilesAreReadOrLeftAloneNeverOverwritten() throws {
		var random = SplitMix64(seed: 0x1_1AC5)
		let folder = try TemporaryDirectory()
		let devices = ["/dev/null", "/dev/zero", "/dev/full"]
		let lockFilesBefore = devices.map { Self.lockPath(beside: $0) }.filter { access($0, F_OK) == 0 }
		var shapes: Set<String> = []
		for index in 0..<Self.caseCount {
			let end = End.allCases[random.next(below: End.allCases.count)]
			let length = 1 + random.next(below: 60)
			shapes.insert("\(end) \(length <= ResolvedSettingsPath.linkLimit)")
			let place = folder.file("case-\(index)")
			try FileManager.default.createDirectory(at: place, withIntermediateDirectories: false)
			try FileManager.default.createDirectory(
				at: place.appending(path: "sub"), withIntermediateDirectories: false)
			let endPath = place.appending(path: "end.plist").path
			var endBytes: Data?
			switch end {
			case .settings:
				endBytes = try PropertyListSerialization.data(
					fromPropertyList: ["precious": "KEEP"], format: .binary, options: 0)
			case .garbage:
				endBytes = Data((0..<(1 + random.next(below: 300))).map { _ in UInt8(random.next(below: 256)) })
			case .fifo:
				#expect(mkfifo(endPath, 0o600) == 0)
			case .missing, .device, .pagemap, .loop:
				break
			}
			if let endBytes {
				try endBytes.write(to: URL(filePath: endPath))
			}
			var links: [(path: String, destination: String)] = []
			for step in 0..<length {
				let next: String
				if step == length - 1 {
					switch end {
					case .device: next = devices[random.next(below: devices.count)]
					case .pagemap: next = "/proc/self/pagemap"
					case .loop: next = "link-0"
					default: next = "end.plist"
					}
				} else {
					next = "link-\(step + 1)"
				}
				// Absolute, relative, or relative through a folder and back.
				let destination =
					next.hasPrefix("/")
					? next
					: [place.appending(path: next).path, next, "sub/../" + next][random.next(below: 3)]
				let path = place.appending(path: "link-\(step)").path
				#expect(symlink(destination, path) == 0)
				links.append((path, destination))
			}

			let store = Defaults.FileStore.at(place.appending(path: "link-0"))
			store.setStoredValue(index, forKey: "written")
			let isWritten = store.flush()
			// A store that could not write would try again after this test removed its folder, and make it again.
			store.discardPendingChanges()
			let isFollowed = length <= ResolvedSettingsPath.linkLimit && end != .loop
			let description = "case \(index): \(end), \(length) links"

			for link in links {
				#expect(
					(try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == link.destination,
					"\(description): \(link.path) is no longer the link it was")
			}
			let names = try FileManager.default.contentsOfDirectory(atPath: place.path)
			let asides = names.filter { $0.hasPrefix("end.plist.corrupt-") }
			switch (end, isFollowed) {
			case (.settings, true):
				#expect(isWritten, "\(description)")
				let values = try PropertyListFile.decode(Data(contentsOf: URL(filePath: endPath)))
				#expect(values["precious"] as? String == "KEEP" && values["written"] as? Int == index, "\(description)")
			case (.garbage, true):
				#expect(isWritten, "\(description)")
				#expect(asides.count == 1, "\(description): \(names)")
				if let aside = asides.first {
					#expect(try Data(contentsOf: place.appending(path: aside)) == endBytes, "\(description)")
				}
			case (.missing, true):
				#expect(isWritten, "\(description)")
				#expect(FileManager.default.fileExists(atPath: endPath), "\(description)")
			case (.settings, false), (.garbage, false):
				#expect(!isWritten, "\(description)")
				#expect(try Data(contentsOf: URL(filePath: endPath)) == endBytes, "\(description): overwritten")
				#expect(asides.isEmpty, "\(description)")
			case (.fifo, _):
				#expect(!isWritten, "\(description)")
				var status = stat()
				#expect(lstat(endPath, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "\(description)")
			case (.missing, false), (.device, _), (.pagemap, _), (.loop, _):
				#expect(!isWritten, "\(description)")
				#expect(!FileManager.default.fileExists(atPath: endPath), "\(description)")
			}
		}
		#expect(shapes.count >= 12, "the cases reach every end, followed and not: \(shapes.sorted())")
		let lockFilesAfter = devices.map { Self.lockPath(beside: $0) }.filter { access($0, F_OK) == 0 }
		#expect(lockFilesAfter == lockFilesBefore, "lock files appeared beside devices")
	}

	@Test func aFileThatKeepsGrowingIsReadWithABoundAndKeptAsideWhole() throws {
		let folder = try TemporaryDirectory()
		let url = folder.file("growing.plist")
		let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
		#expect(descriptor >= 0)
		let chunk = [UInt8](repeating: 0x41, count: 1 << 20)
		#expect(write(descriptor, chunk, chunk.count) == chunk.count)
		let growth = Growth(written: chunk.count)
		let grower = Thread {
			// Far past the limit if nothing bounded the read: 4 MiB every few milliseconds.
			while growth.isGrowing.load(ordering: .relaxed) {
				for _ in 0..<4 where write(descriptor, chunk, chunk.count) == chunk.count {
					growth.written.add(chunk.count, ordering: .relaxed)
				}
				usleep(2_000)
			}
			growth.hasStopped.store(true, ordering: .releasing)
		}
		grower.start()
		defer { close(descriptor) }
		let started = ContinuousClock.now
		let store = Defaults.FileStore.at(url)
		growth.isGrowing.store(false, ordering: .relaxed)
		#expect(ContinuousClock.now - started < .seconds(30))
		#expect(store.storedKeys().isEmpty)
		#expect(waitUntil(seconds: 10) { growth.hasStopped.load(ordering: .acquiring) })
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		let aside = try #require(names.first { $0.hasPrefix("growing.plist.corrupt-") }, "\(names)")
		let size = try #require(
			try FileManager.default.attributesOfItem(atPath: folder.file(aside).path)[.size] as? Int)
		#expect(size == growth.written.load(ordering: .relaxed), "the file moved aside lost bytes")
	}

	static func lockPath(beside path: String) -> String {
		(path as NSString).deletingLastPathComponent + "/." + (path as NSString).lastPathComponent + ".lock"
	}
}

/// What the growing-file test's writer thread shares with the test.
private final class Growth: Sendable {
	let isGrowing = Atomic(true)
	let hasStopped = Atomic(false)
	let written: Atomic<Int>

	init(written: Int) {
		self.written = Atomic(written)
	}
}
