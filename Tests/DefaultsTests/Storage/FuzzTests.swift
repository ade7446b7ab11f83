import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// The size of a fuzz run and its time limit, outside the suites so that their traits can name it.
enum FuzzRun {
	/// `DEFAULTS_FUZZ_CASES`, or CI's 3,000.
	static let caseCount = ProcessInfo.processInfo.environment["DEFAULTS_FUZZ_CASES"].flatMap(Int.init) ?? 3_000

	/// Each test's time limit in minutes: 2 for CI's cases, and one per 100,000 cases for the long run, whose third
	/// of a million random values took 195 s on two loaded cores against a fixed 2 minutes.
	static var minutes: Int { max(2, caseCount / 100_000) }
}

/// Deterministic fuzzing of everything that reads stored data: settings files of every format, mutated, and random
/// property-list values handed to every built-in bridge. A crash fails the run; every outcome is checked.
///
/// `DEFAULTS_FUZZ_CASES` raises the number of mutated files (see Docs/FileStore.md, "Fuzzing"); CI runs the default.
@Suite(.scaledTimeLimit(minutes: FuzzRun.minutes)) struct FuzzTests {
	static let caseCount = FuzzRun.caseCount

	/// Valid files of each format the reader takes, to mutate.
	static var seeds: [Data] {
		let values: [String: Any] = [
			"count": 42, "negative": -7, "huge": UInt64.max, "ratio": 0.25, "name": "Ada ✓", "flag": true,
			"data": Data([0, 1, 2, 255]), "date": Date(timeIntervalSinceReferenceDate: 700_000_000.5),
			"list": [1, "two", [3.0, false]] as [Any], "nested": ["a": ["b": ["c": 1]]],
			"shared": ["same", "same", "same"],
		]
		var files = [
			try! BinaryPropertyList.encode(values),
			try! PropertyListSerialization.data(fromPropertyList: values, format: .xml, options: 0),
			try! PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0),
			Data("{ name = \"Ada\"; list = (a, \"b c\", <0fbd>); nested = { x = (1, 2); }; }".utf8),
		]
		files += HostileFiles.all.filter { $0.data.count < 4_096 }.map(\.data)
		return files
	}

	@Test func mutatedSettingsFilesAreReadOrRefusedNeverCrash() throws {
		var random = SplitMix64(seed: 0x5EED_F11E)
		let seeds = Self.seeds
		var outcomes = (read: 0, refused: 0)
		for _ in 0..<Self.caseCount {
			let data = Mutator.mutate(seeds, using: &random)
			do {
				let values = try PropertyListFile.decode(data)
				outcomes.read += 1
				// What was read is what the store would write back: it must survive its own round trip whole.
				let rewritten = try PropertyListFile.decode(try BinaryPropertyList.encode(values))
				#expect(Defaults.PropertyList.isEqual(rewritten, values), "round trip of \(data.base64EncodedString())")
			} catch {
				outcomes.refused += 1
				#expect(!"\(error)".isEmpty)
			}
		}
		#expect(outcomes.read > 0 && outcomes.refused > 0, "the mutations reach both outcomes: \(outcomes)")
	}

	@Test func aFileStoreInAChildProcessReadsOrKeepsAsideEveryMutatedFile() throws {
		var random = SplitMix64(seed: 0xC41D)
		let seeds = Self.seeds
		let folder = try TemporaryDirectory()
		var originals: [String: Data] = [:]
		for index in 0..<60 {
			let name = "case-\(index).plist"
			let data =
				index < HostileFiles.all.count ? HostileFiles.all[index].data : Mutator.mutate(seeds, using: &random)
			try data.write(to: folder.file(name))
			originals[name] = data
		}
		let paths = originals.keys.sorted().map { folder.file($0).path }
		let result = try ChildProcess.run(
			["file-store-open"] + paths, environment: folder.configEnvironment, timeout: 60)
		#expect(!result.wasSignaled && result.status == 0, "\(result)")
		#expect(result.lines.count == paths.count, "\(result)")
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		for (name, data) in originals {
			if let current = try? Data(contentsOf: folder.file(name)) {
				// Read cleanly: the file is as it was (nothing was written).
				#expect(current == data, "\(name) was changed")
				#expect((try? PropertyListFile.decode(data)) != nil || data.isEmpty, "\(name) stayed but does not read")
			} else {
				let asides = names.filter { $0.hasPrefix(name + ".corrupt-") }
				#expect(asides.count == 1, "\(name): neither read nor kept aside")
				if let aside = asides.first {
					#expect(try Data(contentsOf: folder.file(aside)) == data, "\(name) was not kept byte for byte")
				}
			}
		}
	}

	@Test func randomStoredValuesNeverCrashABridge() {
		FailureRecorder.start()
		var random = SplitMix64(seed: 0xB41D6E)
		let store = Defaults.InMemoryStore()
		let readers = BridgeReaders(store: store)
		var decoded = 0
		for _ in 0..<(Self.caseCount / 3) {
			let value = RandomPropertyList.value(using: &random, depth: 0)
			store.setStoredValue(value, forKey: readers.name)
			decoded += readers.readAll()
		}
		#expect(decoded > 0, "some random values decode")
	}
}

/// Reads one stored value through keys of every built-in bridge family; returns how many decoded.
private struct BridgeReaders {
	let name = uniqueKeyName("fuzz")
	let reads: [() -> Bool]

	init(store: Defaults.InMemoryStore) {
		let name = self.name
		func reader<Value: Defaults.Serializable & Equatable>(_ fallback: Value) -> () -> Bool {
			let key = Defaults.Key<Value>(name, default: fallback, suite: store)
			return {
				_ = key.storedState()
				return store[key] != fallback
			}
		}
		reads = [
			reader(0), reader(0 as Int8), reader(0 as UInt64), reader(0.5), reader(Float(0.5)), reader(false),
			reader(""), reader(Data([9])), reader(Date(timeIntervalSince1970: 1)), reader(URL(filePath: "/x")),
			reader(UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))), reader([0]), reader(["": 0]),
			reader(Set([""])), reader(0..<1), reader(0.0...1.0), reader(Window(width: 1, height: 1, title: "")),
			reader(Letter.alpha), reader(Size.small), reader(Theme.light), reader(Mime.json), reader(Permissions.read),
			reader([[0]]), reader(["": ["": 0.5]]), reader(Int?.none), reader([Int?]([nil])),
			reader(Defaults.AnySerializable(0)), reader([Defaults.AnySerializable(0)]),
		]
	}

	func readAll() -> Int {
		reads.filter { $0() }.count
	}
}

/// Random normalised property-list values, nested at most a few levels.
private enum RandomPropertyList {
	static func value(using random: inout SplitMix64, depth: Int) -> Any {
		switch random.next(below: depth > 3 ? 9 : 11) {
		case 0: return random.next(below: 2) == 0
		case 1: return Int(bitPattern: UInt(truncatingIfNeeded: random.next()))
		case 2: return Int(random.next(below: 20)) - 10
		case 3:
			return [Double.nan, .infinity, -0.0, 1e308, 0.5, Double(bitPattern: random.next())][random.next(below: 6)]
		case 4:
			return ["", "a", "light", "json", "{\"width\":1}", "[1,2]", "0", "https://e.com/a?b", "👋"][
				random.next(below: 9)]
		case 5: return Data((0..<random.next(below: 20)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
		case 6: return Date(timeIntervalSinceReferenceDate: Double(Int(random.next(below: 2_000_000)) - 1_000_000))
		case 7: return UInt64.max - UInt64(random.next(below: 100))
		case 8:
			return String(
				decoding: (0..<random.next(below: 12)).map { _ in UInt8(random.next(below: 95) + 32) }, as: UTF8.self)
		case 9: return (0..<random.next(below: 4)).map { _ in value(using: &random, depth: depth + 1) }
		default:
			var dictionary: [String: Any] = [:]
			for index in 0..<random.next(below: 4) {
				dictionary[
					["width", "height", "title", "lowerBound", "upperBound", "k\(index)"][random.next(below: 6)]] =
					value(using: &random, depth: depth + 1)
			}
			return dictionary
		}
	}
}

/// Mutations of valid files: bit flips, truncation, trailer and offset-table edits, splices, inserted bytes.
private enum Mutator {
	static func mutate(_ seeds: [Data], using random: inout SplitMix64) -> Data {
		var bytes = [UInt8](seeds[random.next(below: seeds.count)])
		for _ in 0...random.next(below: 3) {
			guard !bytes.isEmpty else {
				break
			}
			switch random.next(below: 7) {
			case 0:
				let index = random.next(below: bytes.count)
				bytes[index] ^= 1 << UInt8(random.next(below: 8))
			case 1:
				bytes = Array(bytes.prefix(random.next(below: bytes.count)))
			case 2:
				// The trailer of a binary file: sizes, object count, top object, table offset.
				let index = max(0, bytes.count - 1 - random.next(below: min(32, bytes.count)))
				bytes[index] = UInt8(truncatingIfNeeded: random.next())
			case 3:
				// Somewhere in the offset table, which sits just before the trailer.
				let index = max(0, bytes.count - 33 - random.next(below: min(64, bytes.count)))
				bytes[index] = [0x00, 0xFF, 0x7F, 0x80][random.next(below: 4)]
			case 4:
				let other = [UInt8](seeds[random.next(below: seeds.count)])
				let cut = random.next(below: bytes.count)
				let from = random.next(below: max(1, other.count))
				bytes = Array(bytes[..<cut]) + Array(other[min(from, other.count)...])
			case 5:
				let index = random.next(below: bytes.count)
				bytes.insert(
					contentsOf: (0..<random.next(below: 8)).map { _ in UInt8(truncatingIfNeeded: random.next()) },
					at: index)
			default:
				let index = random.next(below: bytes.count)
				bytes[index] = [0x0F, 0x1F, 0x5F, 0x6F, 0xAF, 0xDF, 0x33, 0xC1, 0x80][random.next(below: 9)]
			}
		}
		return Data(bytes)
	}
}

/// A small, fast, seedable generator, so that every run fuzzes the same cases.
struct SplitMix64: RandomNumberGenerator {
	private var state: UInt64

	init(seed: UInt64) {
		state = seed
	}

	mutating func next() -> UInt64 {
		state &+= 0x9E37_79B9_7F4A_7C15
		var z = state
		z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
		z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
		return z ^ (z >> 31)
	}

	mutating func next(below bound: Int) -> Int {
		Int(next() % UInt64(bound))
	}
}
