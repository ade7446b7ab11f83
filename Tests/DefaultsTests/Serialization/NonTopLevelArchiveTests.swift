import Defaults
import Foundation
import Testing

/// A private or nested `NSSecureCoding` class: Foundation on Linux stops the process when asked to archive it
/// (`NSStringFromClass: … is not a top-level class`). The key refuses it and reports why instead.
@Suite struct NonTopLevelArchiveTests {
	private final class PrivateBookmark: NSObject, NSSecureCoding, Defaults.Serializable {
		static let supportsSecureCoding = true
		let path: String

		init(path: String) {
			self.path = path
		}

		init?(coder: NSCoder) {
			guard let path = coder.decodeObject(of: NSString.self, forKey: "path") as String? else {
				return nil
			}
			self.path = path
		}

		func encode(with coder: NSCoder) {
			coder.encode(path as NSString, forKey: "path")
		}
	}

	@Test func aKeyOfAPrivateClassIsCreatedAndWrittenWithoutStoppingTheProcessAndTheReasonIsReported() {
		FailureRecorder.start()
		let store = Defaults.InMemoryStore()
		let name = uniqueKeyName("privateBookmark")
		let key = Defaults.Key<PrivateBookmark>(name, default: PrivateBookmark(path: "/default"), suite: store)
		store[key] = PrivateBookmark(path: "/tmp/x")
		#expect(store.storedValue(forKey: name) == nil)
		#expect(store[key].path == "/default")

		// Once for the type (the write that stored nothing is reported too, under the key's name).
		let reports = FailureRecorder.failures(mentioning: "PrivateBookmark cannot be stored as a keyed archive")
		#if canImport(ObjectiveC)
			#expect(reports.isEmpty)
		#else
			#expect(reports.count == 1, "\(reports)")
			#expect(reports.first?.message.contains("top-level") == true)
			#expect(!FailureRecorder.failures(forKey: name).isEmpty)
		#endif
	}
}
