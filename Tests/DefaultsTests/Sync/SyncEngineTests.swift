import Foundation
import Testing

@testable import Defaults

@Suite struct SyncedValueCodingTests {
	// The bytes a synced value travels as; a change here breaks every machine still running the old form.
	@Test func theWireFormIsPinned() throws {
		let bytes = try SyncedValueCoding.encode("world")
		#expect(
			bytes.base64EncodedString()
				== "YnBsaXN0MDBVdmFsdWVVd29ybGTRAAEIDhQAAAAAAAABAQAAAAAAAAADAAAAAAAAAAIAAAAAAAAAFw==")
		#expect(SyncedValueCoding.decode(bytes) as? String == "world")
		#expect(try Fixtures.dictionary(Self.wireForms)["string world"] as? Data == bytes)
	}

	/// The wire forms every machine of a prefix must agree on, whatever version of the package it runs.
	static let wireForms = "Sync/WireForms.plist"

	@Test func anythingElseDoesNotDecode() {
		#expect(SyncedValueCoding.decode(Data("world".utf8)) == nil)
		#expect(SyncedValueCoding.decode(try! BinaryPropertyList.encode(["other": 1])) == nil)
	}

	/// A removal travels as no bytes at all: pinned like the values, and never a value's form (an empty string, an
	/// empty array or dictionary are values, and encode to bytes).
	@Test func aRemovalIsATombstoneOfNoBytes() throws {
		#expect(try SyncedValueCoding.pushedBytes(of: nil) == Data())
		#expect(try Fixtures.dictionary(Self.wireForms)["removal"] as? Data == SyncedValueCoding.tombstone)
		#expect(SyncedValueCoding.isRemoval(Data()) && SyncedValueCoding.isRemoval(nil))
		for value: Any in ["", [Any](), [String: Any](), false, 0] {
			let bytes = try SyncedValueCoding.pushedBytes(of: value)
			#expect(!SyncedValueCoding.isRemoval(bytes))
			#expect(Defaults.PropertyList.isEqual(try #require(SyncedValueCoding.decode(bytes)), value))
		}
		#expect(SyncedValueCoding.decode(SyncedValueCoding.tombstone) == nil)
	}

	/// The mark the version-2 fixtures carry: machine `01 02 … 10`, sequence 812.
	static let fixtureMark = SyncedValueCoding.Mark(machine: Data(1...16), sequence: 812)

	/// Version 2 carries the pushing machine's mark; pinned like version 1, value and removal.
	@Test func theMarkedWireFormIsPinned() throws {
		let fixtures = try Fixtures.dictionary(Self.wireForms)
		let value = try SyncedValueCoding.pushedBytes(of: "world", mark: Self.fixtureMark)
		let removal = try SyncedValueCoding.pushedBytes(of: nil, mark: Self.fixtureMark)
		#expect(fixtures["string world v2"] as? Data == value)
		#expect(fixtures["removal v2"] as? Data == removal)
		guard case .value(let decoded, let mark) = SyncedValueCoding.contents(of: value) else {
			Issue.record("version 2 does not decode")
			return
		}
		#expect(decoded as? String == "world" && mark == Self.fixtureMark)
		#expect(SyncedValueCoding.isRemoval(removal) && SyncedValueCoding.mark(of: removal) == Self.fixtureMark)
		#expect(SyncedValueCoding.decode(removal) == nil && !SyncedValueCoding.isRemoval(value))
	}

	/// An atomic update's record of this machine's commits of a key (issue 28) is pinned too; it keeps the highest
	/// sequences, and a sequence it dropped is told from one that never committed.
	@Test func theUpdateRecordIsPinned() throws {
		let fixtures = try Fixtures.dictionary(Self.wireForms)
		let record = AtomicUpdateLoop.Record(committed: [811, 812], dropped: 3)
		#expect(fixtures["update record"] as? Data == record.bytes)
		#expect(AtomicUpdateLoop.Record(record.bytes) == record)
		#expect(AtomicUpdateLoop.Record(nil) == AtomicUpdateLoop.Record())
		#expect(AtomicUpdateLoop.Record(Data("{}".utf8)) == nil)
		var full = AtomicUpdateLoop.Record()
		for sequence in (1...AtomicUpdateLoop.Record.capacity + 2).reversed() {
			full = full.adding(sequence)
		}
		#expect(full.committed == Array(3...AtomicUpdateLoop.Record.capacity + 2))
		#expect(full.dropped == 2)
		#expect(
			AtomicUpdateLoop.Record.key(of: "/p/count", machine: Self.fixtureMark.machine)
				== "/p/count/.defaults-update/0102030405060708090a0b0c0d0e0f10")
	}

	/// The prefix's epoch key (a remote that lost its data) is pinned too: its name, its value's form, and the field of
	/// the state that remembers it, absent in older states.
	@Test func theEpochIsPinned() throws {
		let fixtures = try Fixtures.dictionary(Self.wireForms)
		#expect(fixtures["epoch"] as? Data == SyncWorker.newEpoch(id: Self.fixtureMark.machine))
		#expect(SyncWorker.epochName == ".defaults-epoch" && !Defaults.isValidKeyPath(name: SyncWorker.epochName))
		let older = try JSONDecoder().decode(
			SyncState.self, from: Data(#"{"format":2,"revision":5,"records":{}}"#.utf8))
		#expect(older.epoch == nil && older.revision == 5)
		var state = SyncState()
		state.epoch = "0102030405060708090a0b0c0d0e0f10"
		let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(state)) as? [String: Any]
		#expect(json?["epoch"] as? String == state.epoch)
	}

	/// Version 1, as every machine wrote it before marks, still reads: a value without a mark, and a removal.
	@Test func theFirstVersionStillReads() throws {
		let fixtures = try Fixtures.dictionary(Self.wireForms)
		let value = try #require(fixtures["string world"] as? Data)
		guard case .value(let decoded, nil) = SyncedValueCoding.contents(of: value) else {
			Issue.record("version 1 does not decode")
			return
		}
		#expect(decoded as? String == "world")
		guard case .removal(nil) = SyncedValueCoding.contents(of: try #require(fixtures["removal"] as? Data)) else {
			Issue.record("a version-1 removal is not one")
			return
		}
	}

	/// What a machine still on version 1 does with version 2: its decoder (below, as it was) wants a root of one
	/// entry, so a marked value and a marked removal are neither a value nor a removal for it, but unreadable: it
	/// keeps its local value and reports the key, and pushes nothing over it.
	@Test func aVersionOneReaderFindsVersionTwoUnreadable() throws {
		let fixtures = try Fixtures.dictionary(Self.wireForms)
		func decodeAsVersionOne(_ data: Data) -> Any? {
			guard let root = SyncedValueCoding.value(ofBinaryPropertyList: data) as? [String: Any], root.count == 1
			else {
				return nil
			}
			return root["value"]
		}
		for name in ["string world v2", "removal v2"] {
			let bytes = try #require(fixtures[name] as? Data)
			#expect(decodeAsVersionOne(bytes) == nil && !bytes.isEmpty, "\(name)")
		}
		#expect(decodeAsVersionOne(try #require(fixtures["string world"] as? Data)) as? String == "world")
	}

	/// A version this package does not know, or a mark of the wrong shape, is unreadable, never a value.
	@Test func aNewerVersionIsUnreadable() throws {
		let newer = try BinaryPropertyList.encode(["by": Data(1...16), "seq": 1, "v": 3, "value": "x"])
		let badMark = try BinaryPropertyList.encode(["by": "me", "seq": 1, "v": 2, "value": "x"])
		let extra = try BinaryPropertyList.encode(["by": Data(1...16), "seq": 1, "v": 2, "value": "x", "more": 1])
		for bytes in [newer, badMark, extra] {
			guard case .unreadable = SyncedValueCoding.contents(of: bytes) else {
				Issue.record("read as a value or removal")
				continue
			}
			#expect(!SyncedValueCoding.isRemoval(bytes))
		}
	}

	@Test func everyStoredFormTravels() throws {
		let stored: [String: Any] = [
			"list": [1, 2.5, "x"], "date": Date(timeIntervalSinceReferenceDate: 1), "ok": true,
		]
		let decoded = try #require(SyncedValueCoding.decode(try SyncedValueCoding.encode(stored)))
		#expect(Defaults.PropertyList.isEqual(decoded, stored))
	}
}

/// What an engine listens to as keys are added and removed.
@Suite struct SyncEngineKeysTests {
	/// A remote never reached: these tests do not start the engine.
	struct Unreachable: Defaults.RemoteKeyValueService {
		func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
			throw Defaults.RemoteServiceError.unreachable("test")
		}

		func compareAndSwap(
			key: String, value: Data?, expectedModRevision: Int64
		) async throws
			-> Defaults.RemoteWriteResult
		{
			throw Defaults.RemoteServiceError.unreachable("test")
		}

		func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
			throw Defaults.RemoteServiceError.unreachable("test")
		}

		func watch(
			prefix: String, fromRevision revision: Int64
		) -> AsyncThrowingStream<
			[Defaults.RemoteEvent], any Error
		> {
			AsyncThrowingStream { $0.finish(throwing: Defaults.RemoteServiceError.unreachable("test")) }
		}
	}

	@Test func aRemovedKeyIsNoLongerHeardAndOneAddedAgainIsHeardOnce() {
		let store = Defaults.InMemoryStore()
		let engine = Defaults.SyncEngine(remote: Unreachable(), prefix: "/test/keys/", store: store)
		engine.add(["theme", "font"])
		#expect(StoreRuntime.of(store).listenerCount(forKey: "theme").taps == 1)
		engine.remove(["theme"])
		#expect(StoreRuntime.of(store).listenerCount(forKey: "theme").taps == 0)
		#expect(StoreRuntime.of(store).listenerCount(forKey: "font").taps == 1)
		engine.add(["theme"])
		#expect(StoreRuntime.of(store).listenerCount(forKey: "theme").taps == 1)
		#expect(StoreRuntime.of(store).listenerCount(forKey: "font").taps == 1)
		engine.remove(["theme", "font"])
		#expect(StoreRuntime.of(store).listenerCount(forKey: "font").taps == 0)
	}
}
