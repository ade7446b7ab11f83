// Checks, through a file store, three rows of the "Values" table of the DocC article "Linux notes"
// (Sources/Defaults/Documentation.docc/LinuxNotes.md): Int.max, a Float and a date with fractional seconds come back
// exactly.
import Defaults
import Foundation
import Testing

@Suite struct LinuxNotesExampleTests {
	@Test func valuesComeBackAsTheyWentIn() throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.FileStore.at(folder.file("settings.plist"))
		let big = Defaults.Key<Int>("big", default: 0, suite: store)
		let ratio = Defaults.Key<Float>("ratio", default: 0, suite: store)
		let saved = Defaults.Key<Date?>("saved", suite: store)

		store[big] = .max  // Int.max, not an Int64 that reads as 0
		store[ratio] = 1.1  // exactly Float(1.1), not 1.100000023841858
		store[saved] = Date(timeIntervalSinceReferenceDate: 700_000_000.123)  // fractional seconds kept

		#expect(store[big] == .max)
		#expect(store[ratio] == Float(1.1))
		#expect(store[saved] == Date(timeIntervalSinceReferenceDate: 700_000_000.123))

		// And in the file, as a new process would read it.
		#expect(store.flush())
		let data = try Data(contentsOf: folder.file("settings.plist"))
		let file = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
		let reread = try Defaults.InMemoryStore(values: file)
		#expect(reread[big] == .max)
		#expect(reread[ratio] == Float(1.1))
		#expect(reread[saved] == Date(timeIntervalSinceReferenceDate: 700_000_000.123))
	}
}
