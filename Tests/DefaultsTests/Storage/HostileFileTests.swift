import DefaultsTestSupport
import Foundation
import Synchronization
import Testing

@testable import Defaults

/// Settings files built to crash or hang a reader: every one is refused with a reason, kept aside byte for byte,
/// and never takes the process down.
@Suite struct HostileFileTests {
	@Test(arguments: HostileFiles.all.map(\.name))
	func theSettingsFileReaderRefusesEveryHostileFile(name: String) throws {
		let data = try #require(HostileFiles.all.first { $0.name == name }).data
		if name == "NaN date" {
			// A NaN date is a property-list value; what must not trap is describing it (see below).
			#expect(try PropertyListFile.decode(data)["n"] is Date)
			return
		}
		#expect(throws: PropertyListFile.Error.self) {
			try PropertyListFile.decode(data)
		}
	}

	@Test(arguments: ["huge offset", "set inside", "shared fan-out", "lone surrogate", "OpenStep missing semicolon"])
	func aFileStoreMovesAHostileFileAsideWithItsBytesIntact(name: String) throws {
		let data = try #require(HostileFiles.all.first { $0.name == name }).data
		let folder = try TemporaryDirectory()
		let file = folder.file("hostile.plist")
		try data.write(to: file)
		let store = Defaults.FileStore.at(file)
		#expect(store.storedKeys().isEmpty)
		let names = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
		let aside = try #require(names.first { $0.hasPrefix("hostile.plist.corrupt-") })
		#expect(try Data(contentsOf: folder.file(aside)) == data)
	}

	@Test func aStoredNaNDateIsDescribedWithoutTrapping() throws {
		FailureRecorder.start()
		let store = Defaults.InMemoryStore()
		let name = uniqueKeyName("nanDate")
		store.setStoredValue(try PropertyListFile.decode(HostileFiles.nanDate)["n"]!, forKey: name)
		let key = Defaults.Key<Int>(name, default: 3, suite: store)
		#expect(store[key] == 3)
		let failure = try #require(FailureRecorder.failures(forKey: name).first)
		#expect(failure.message.contains("nan"), "\(failure.message)")
	}

	@Test(arguments: ["set inside", "shared fan-out", "huge offset"])
	func aHostileArchiveInAStoredValueReadsAsTheDefault(name: String) throws {
		let data = try #require(HostileFiles.all.first { $0.name == name }).data
		let keyName = uniqueKeyName("archive")
		let store = try Defaults.InMemoryStore(values: [keyName: data])
		let key = Defaults.Key<Bookmark?>(keyName, suite: store)
		#expect(store[key] == nil)
		#expect(store.storedValue(forKey: keyName) as? Data == data)
	}

	@Test func aNaNDateIsRefusedForWriting() {
		let store = Defaults.InMemoryStore()
		#expect(throws: Defaults.PropertyList.Error.self) {
			try store.write(Date(timeIntervalSinceReferenceDate: .nan), forKey: "date")
		}
		#expect(store.storedValue(forKey: "date") == nil)
	}

	@Test func valuesNestedUpToTheLimitAreWrittenAndReadBack() throws {
		let folder = try TemporaryDirectory()
		let file = folder.file("deep.plist")
		let store = Defaults.FileStore.at(file)
		var value: Any = 1
		for _ in 0..<Defaults.PropertyList.maximumDepth {
			value = [value]
		}
		try store.write(value, forKey: "deep")
		#expect(store.flush())
		let reread = try PropertyListFile.decode(try Data(contentsOf: file))
		#expect(Defaults.PropertyList.isEqual(try #require(reread["deep"]), value))
		// Foundation reads it too.
		let foundation = try PropertyListSerialization.propertyList(from: try Data(contentsOf: file), format: nil)
		#expect((foundation as? [String: Any])?["deep"] != nil)
	}

	@Test(arguments: [Defaults.PropertyList.maximumDepth + 1, 511, 100_000])
	func valuesNestedDeeperThanReadersReadAreRefusedAndNothingIsWritten(depth: Int) throws {
		let folder = try TemporaryDirectory()
		let file = folder.file("deep.plist")
		let store = Defaults.FileStore.at(file)
		try store.write(1, forKey: "kept")
		#expect(store.flush())
		// Swift frees a nested array recursively: a value this deep needs a large stack just to be built and freed,
		// which the writer itself must not need.
		let refused = onLargeStack {
			var value: Any = 1
			for _ in 0..<depth {
				value = [value]
			}
			do {
				try store.write(value, forKey: "deep")
				return false
			} catch {
				return error is Defaults.PropertyList.Error
			}
		}
		#expect(refused)
		#expect(store.storedValue(forKey: "deep") == nil)
		#expect(store.flush())
		#expect(try PropertyListFile.decode(try Data(contentsOf: file)).keys.sorted() == ["kept"])
	}

	@Test func aNaNThatDidNotChangeIsNotAChange() {
		#expect(Defaults.PropertyList.isEqual(Double.nan, Double.nan))
		#expect(Defaults.PropertyList.isEqual(["x": [Double.nan]], ["x": [Double.nan]]))
		#expect(!Defaults.PropertyList.isEqual(Double.nan, 1.0))
		let changed = Defaults.FileStore.changedKeys(
			from: ["nan": Double.nan, "other": 1], to: ["nan": Double.nan, "other": 2])
		#expect(changed == ["other"])
		var first = Hasher()
		var second = Hasher()
		Defaults.PropertyList.hash(Double.nan, into: &first)
		Defaults.PropertyList.hash(Double.nan, into: &second)
		#expect(first.finalize() == second.finalize())
	}

	@Test func openStepFilesReadLikeFoundationReadsThem() throws {
		let text = """
			// a comment
			{ name = "Ada \\"L\\" \\U00e9"; list = (a, "b c", <0fbd 77>, ()); nested = { x = y; }; /* c */ empty = ""; }
			"""
		let values = try PropertyListFile.decode(Data(text.utf8))
		let foundation = try PropertyListSerialization.propertyList(from: Data(text.utf8), format: nil)
		#expect(Defaults.PropertyList.isEqual(values, try Defaults.PropertyList.normalize(foundation)))
		#expect(values["name"] as? String == "Ada \"L\" é")
	}
}

/// Runs `body` on a thread with a 512 MiB stack and returns its result.
func onLargeStack<Result: Sendable>(_ body: @escaping @Sendable () -> Result) -> Result {
	let box = LockedState<Result?>(nil)
	let done = DispatchSemaphore(value: 0)
	let thread = Thread {
		let result = body()
		box.withLock { $0 = result }
		done.signal()
	}
	thread.stackSize = 512 << 20
	thread.start()
	done.wait()
	return box.withLock { $0! }
}
