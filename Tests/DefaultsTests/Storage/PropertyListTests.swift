import Defaults
import Foundation
import Testing

@Suite struct PropertyListTests {
	@Test func integersOfEveryWidthBecomeInt() throws {
		let values: [Any] = [Int8(-1), Int16(2), Int32(3), Int64(4), UInt8(5), UInt16(6), UInt32(7), UInt(8)]
		for value in values {
			#expect(try Defaults.PropertyList.normalize(value) is Int, "\(type(of: value))")
		}
	}

	@Test func integersAboveIntMaxStayUInt64() throws {
		#expect(try Defaults.PropertyList.normalize(UInt64.max) as? UInt64 == .max)
		#expect(try Defaults.PropertyList.normalize(UInt64(5)) as? Int == 5)
	}

	@Test func realsBecomeDoubleExactly() throws {
		#expect(try Defaults.PropertyList.normalize(Float(1.1)) as? Double == Double(Float(1.1)))
		#expect(try Defaults.PropertyList.normalize(CGFloat(2.5)) as? Double == 2.5)
	}

	@Test func foundationNumbersKeepWhatTheyHold() throws {
		#expect(try Defaults.PropertyList.normalize(NSNumber(value: 5.0)) is Double)
		#expect(try Defaults.PropertyList.normalize(NSNumber(value: 5)) is Int)
		#expect(try Defaults.PropertyList.normalize(NSNumber(value: UInt64.max)) as? UInt64 == .max)
	}

	@Test func collectionsAreNormalisedDeeply() throws {
		let value: [String: Any] = ["a": [Int8(1), Float(0.5)], "b": ["c": UInt16(3)] as [AnyHashable: Any]]
		let normalized = try #require(try Defaults.PropertyList.normalize(value) as? [String: Any])
		#expect((normalized["a"] as? [Any])?.first is Int)
		#expect((normalized["a"] as? [Any])?.last is Double)
		#expect((normalized["b"] as? [String: Any])?["c"] is Int)
	}

	@Test func serializableValuesInsideCollectionsGoThroughTheirBridges() throws {
		let id = UUID()
		let normalized = try Defaults.PropertyList.normalize([id]) as? [String]
		#expect(normalized == [id.uuidString])
	}

	@Test func decimalIsRefusedWithAClearReason() {
		#expect {
			try Defaults.PropertyList.normalize(Decimal(1.5))
		} throws: { error in
			"\(error)".contains("Decimal")
		}
	}

	@Test func nonStringDictionaryKeysAreRefusedWithThePath() {
		#expect {
			try Defaults.PropertyList.normalize(["outer": [1: "x"]])
		} throws: { error in
			let description = "\(error)"
			return description.contains("[\"outer\"]") && description.contains("not a String")
		}
	}

	@Test func nilInsideAnArrayIsRefused() {
		#expect(throws: Defaults.PropertyList.Error.self) {
			try Defaults.PropertyList.normalize([1, nil, 3] as [Int?])
		}
	}

	@Test func aStructWithNoStoredFormIsRefused() {
		struct Plain {}
		#expect(throws: Defaults.PropertyList.Error.self) {
			try Defaults.PropertyList.normalize(Plain())
		}
	}

	@Test func writeThroughTheSeamNormalisesAndNilRemoves() throws {
		let store = Defaults.InMemoryStore()
		try store.write(Int8(4), forKey: "small")
		#expect(store.storedValue(forKey: "small") as? Int == 4)
		try store.write(nil, forKey: "small")
		#expect(store.storedValue(forKey: "small") == nil)
		#expect(throws: Defaults.PropertyList.Error.self) { try store.write(Decimal(2), forKey: "small") }
		#expect(store.storedValue(forKey: "small") == nil)
	}
}
