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
