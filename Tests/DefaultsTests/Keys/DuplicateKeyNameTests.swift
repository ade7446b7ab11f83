import Defaults
import Foundation
import Testing

/// One name declared twice in one store with different types is reported once, at the declaration, saying so.
@Suite struct DuplicateKeyNameTests {
	struct User: Codable, Defaults.Serializable {
		var name = ""
	}

	@Test func aNameDeclaredTwiceWithDifferentTypesIsReportedOnceInWordsThatSaySo() {
		FailureRecorder.start()
		let store = Defaults.InMemoryStore()
		let name = uniqueKeyName("user")
		_ = Defaults.Key<User>(name, default: User(), suite: store)
		_ = Defaults.Key<[String: String]>(name, default: [:], suite: store)
		_ = Defaults.Key<[String: String]>(name, default: [:], suite: store)
		_ = Defaults.Key<User>(name, default: User(), suite: store)

		let reports = FailureRecorder.failures(forKey: name).filter { $0.reason == .invalidKeyName }
		#expect(reports.count == 1, "\(reports)")
		#expect(reports.first?.message.contains("declared twice") == true)
		#expect(reports.first?.message.contains("User") == true)
	}

	@Test func theSameNameInOtherStoresOrAsTheOptionalOfTheSameTypeIsFine() {
		FailureRecorder.start()
		let name = uniqueKeyName("volume")
		let first = Defaults.InMemoryStore()
		let second = Defaults.InMemoryStore()
		_ = Defaults.Key<Int>(name, default: 0, suite: first)
		_ = Defaults.Key<Int?>(name, suite: first)
		_ = Defaults.Key<String>(name, default: "", suite: second)
		#expect(FailureRecorder.failures(forKey: name).isEmpty)
	}

	enum Mode: String, Defaults.Serializable {
		case fast
	}

	@Test func typesWhoseStoredFormsAreOfOneKindMayShareAName() {
		FailureRecorder.start()
		let store = Defaults.InMemoryStore()
		let number = uniqueKeyName("number")
		_ = Defaults.Key<Int>(number, default: 0, suite: store)
		_ = Defaults.Key<Int8>(number, default: 0, suite: store)
		let mode = uniqueKeyName("mode")
		_ = Defaults.Key<String>(mode, default: "fast", suite: store)
		_ = Defaults.Key<Mode>(mode, default: .fast, suite: store)
		#expect(FailureRecorder.failures(forKey: number).isEmpty, "Int and Int8 both store an integer")
		#expect(FailureRecorder.failures(forKey: mode).isEmpty, "a String-backed enum stores a string")

		let mixed = uniqueKeyName("mixed")
		_ = Defaults.Key<Int>(mixed, default: 0, suite: store)
		_ = Defaults.Key<Double>(mixed, default: 0, suite: store)
		#expect(FailureRecorder.failures(forKey: mixed).count == 1, "an integer and a real are different forms")
	}
}
