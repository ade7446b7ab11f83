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
	}

	@Test func anythingElseDoesNotDecode() {
		#expect(SyncedValueCoding.decode(Data("world".utf8)) == nil)
		#expect(SyncedValueCoding.decode(try! BinaryPropertyList.encode(["other": 1])) == nil)
	}

	@Test func everyStoredFormTravels() throws {
		let stored: [String: Any] = [
			"list": [1, 2.5, "x"], "date": Date(timeIntervalSinceReferenceDate: 1), "ok": true,
		]
		let decoded = try #require(SyncedValueCoding.decode(try SyncedValueCoding.encode(stored)))
		#expect(Defaults.PropertyList.isEqual(decoded, stored))
	}
}
