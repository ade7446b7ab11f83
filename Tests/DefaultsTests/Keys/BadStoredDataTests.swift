import Defaults
import DefaultsTestSupport
import Foundation
import Testing

/// A stored value that does not decode reads as the default and is never touched.
@Suite struct BadStoredDataTests {
	@Test func aValueOfTheWrongTypeReadsAsTheDefaultAndStaysStored() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let store = try Defaults.InMemoryStore(values: [name: "not a number"])
		let key = Defaults.Key<Int>(name, default: 7, suite: store)
		#expect(store[key] == 7)
		#expect(store.storedValue(forKey: name) as? String == "not a number")
	}

	@Test func undecodableJSONReadsAsTheDefaultAndStaysStored() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let store = try Defaults.InMemoryStore(values: [name: "{\"width\": \"wide\"}"])
		let fallback = Window(width: 1, height: 1, title: "default")
		let key = Defaults.Key<Window>(name, default: fallback, suite: store)
		#expect(store[key] == fallback)
		#expect(store.storedValue(forKey: name) as? String == "{\"width\": \"wide\"}")
	}

	@Test func aFailureIsReportedOnceUntilTheKeyIsWritten() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let store = try Defaults.InMemoryStore(values: [name: ["not", "a", "window"]])
		let key = Defaults.Key<Window?>(name, suite: store)
		#expect(store[key] == nil)
		#expect(store[key] == nil)
		let failures = FailureRecorder.failures(forKey: name)
		#expect(failures.count == 1)
		#expect(failures.first?.reason == .decodingFailed)
		#expect(failures.first?.message.contains("Window") == true)
	}

	@Test func eachNewStoreReportsItsOwnFailureEvenAtAFreedStoresAddress() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		// Each store is freed before the next is made, so the allocator hands out the same few addresses again.
		for _ in 0..<20 {
			let store = try Defaults.InMemoryStore(values: [name: "not a number"])
			#expect(store[Defaults.Key<Int>(name, default: 7, suite: store)] == 7)
		}
		#expect(FailureRecorder.failures(forKey: name).count == 20)
	}

	@Test func anOutOfRangeNumberIsNotTruncated() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let store = try Defaults.InMemoryStore(values: [name: 300])
		let key = Defaults.Key<Int8>(name, default: 1, suite: store)
		#expect(store[key] == 1)
		#expect(store.storedValue(forKey: name) as? Int == 300)
	}

	@Test func anArchiveOfAnotherClassReadsAsTheDefaultWithoutCrashing() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let archive = try NSKeyedArchiver.archivedData(withRootObject: Tag(name: "x"), requiringSecureCoding: true)
		let store = try Defaults.InMemoryStore(values: [name: archive])
		let key = Defaults.Key<Bookmark?>(name, suite: store)
		#expect(store[key] == nil)
		#expect(store.storedValue(forKey: name) as? Data == archive)
	}

	@Test func garbageInsteadOfAnArchiveReadsAsTheDefault() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let store = try Defaults.InMemoryStore(values: [name: Data("garbage".utf8)])
		#expect(store[Defaults.Key<Bookmark?>(name, suite: store)] == nil)
	}

	@Test func aRangeWithBoundsOutOfOrderDoesNotDecode() throws {
		FailureRecorder.start()
		let name = uniqueKeyName()
		let store = try Defaults.InMemoryStore(values: [name: [5, 1]])
		#expect(store[Defaults.Key<Range<Int>>(name, default: 0..<1, suite: store)] == 0..<1)
	}

	@Test func aValueWithNoStoredFormIsRefusedAndNothingIsWritten() {
		FailureRecorder.start()
		let store = Defaults.InMemoryStore()
		let name = uniqueKeyName()
		let key = Defaults.Key<[Defaults.AnySerializable]>(name, default: [], suite: store)
		store[key] = [1, nil, 3]
		#expect(store.storedValue(forKey: name) as? [Any] != nil, "only the registered default is there")
		#expect(store.storedKeys().isEmpty)
		#expect(FailureRecorder.failures(forKey: name).first?.reason == .encodingFailed)
	}
}

@Test func aNewBadValueIsReportedAgainAfterAWriteThroughTheSeam() throws {
	FailureRecorder.start()
	let name = uniqueKeyName()
	let store = try Defaults.InMemoryStore(values: [name: "bad"])
	let key = Defaults.Key<Int>(name, default: 0, suite: store)
	_ = store[key]
	try store.write("worse", forKey: name)
	_ = store[key]
	key.reset()
	try store.write("worst", forKey: name)
	_ = store[key]
	#expect(FailureRecorder.failures(forKey: name).count == 3)
}

/// A Codable value whose `encode` throws, to see that the encoder's error reaches the failure.
private struct RefusesToEncode: Codable, Defaults.Serializable, Equatable {
	struct Refusal: Error, CustomStringConvertible {
		var description: String { "the refusal of RefusesToEncode" }
	}

	var flag = false

	init() {}

	init(from decoder: any Decoder) throws {}

	func encode(to encoder: any Encoder) throws {
		throw Refusal()
	}
}

@Test func aCodableValueWhoseEncodeThrowsIsReportedWithTheEncodersError() {
	FailureRecorder.start()
	let store = Defaults.InMemoryStore()
	let name = uniqueKeyName()
	let key = Defaults.Key<RefusesToEncode?>(name, suite: store)
	store[key] = RefusesToEncode()
	let failure = FailureRecorder.failures(forKey: name).first
	#expect(failure?.reason == .encodingFailed)
	#expect(failure?.message.contains("the refusal of RefusesToEncode") == true, "\(String(describing: failure))")
	#expect(!(failure?.message.contains("returned nil") ?? true))
	#expect(store.storedKeys().isEmpty)
}

/// The type a failed write names is made only when the write fails (not on every write, issue 32), and is the
/// value's type, as before.
@Test func aFailedWriteNamesTheValuesType() {
	FailureRecorder.start()
	let store = Defaults.InMemoryStore()
	let name = uniqueKeyName()
	let key = Defaults.Key<RefusesToEncode>(name, default: RefusesToEncode(), suite: store)
	store[key] = RefusesToEncode()
	let failure = FailureRecorder.failures(forKey: name).first
	#expect(failure?.reason == .encodingFailed)
	#expect(
		failure?.message.contains("A RefusesToEncode value could not be stored") == true,
		"\(String(describing: failure))")
	#expect(store.storedKeys().isEmpty)
}
