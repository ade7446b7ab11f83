// Mirrors the DocC article "Getting started" (Sources/Defaults/Documentation.docc/GettingStarted.md): the same code,
// run. Keep the two in step. Differences: the keys are `fileprivate` and their stored names carry a `gettingStarted`
// prefix, so that they do not meet other tests' keys in the standard store; the suite is a file in a temporary folder
// rather than one in the real configuration folder.
import Defaults
import Foundation
import Testing

extension Defaults.Keys {
	fileprivate static let volume = Key<Double>("gettingStartedVolume", default: 0.8)
	fileprivate static let userName = Key<String?>("gettingStartedUserName")  // optional: defaults to nil
	fileprivate static let recentSearches = Key<[String]>("gettingStartedRecentSearches", default: [])
	fileprivate static let deviceName = Key<String>("gettingStartedDeviceName") { ProcessInfo.processInfo.hostName }
}

@Suite(.serialized) struct GettingStartedExampleTests {
	init() {
		Defaults.reset(.volume, .userName, .recentSearches, .deviceName)
	}

	@Test func readWriteReset() {
		defer { Defaults.reset(.volume, .userName, .recentSearches) }

		#expect(Defaults[.volume] == 0.8)  // nothing stored yet
		Defaults[.volume] = 0.5
		Defaults[.volume] += 0.1  // 0.6
		#expect(abs(Defaults[.volume] - 0.6) < 1e-12)
		Defaults[.recentSearches].append("swift")
		#expect(Defaults[.recentSearches] == ["swift"])
		Defaults[.userName] = "Ada"
		#expect(Defaults[.userName] == "Ada")
		Defaults[.userName] = nil  // removes the stored value
		#expect(Defaults.standardStore.storedValue(forKey: "gettingStartedUserName") == nil)

		Defaults.reset(.volume, .recentSearches)  // both read as their defaults again
		#expect(Defaults.Keys.volume.isDefaultValue)  // true
		#expect(Defaults[.recentSearches].isEmpty)
	}

	@Test func aComputedDefaultIsEvaluatedAtRead() {
		#expect(Defaults[.deviceName] == ProcessInfo.processInfo.hostName)
	}

	@Test func anyKeyInAnyStore() {
		let isUnicorn = Defaults.Key<Bool>("gettingStartedIsUnicorn", default: true)
		defer { isUnicorn.reset() }
		Defaults[isUnicorn] = false

		let scratch = Defaults.InMemoryStore()
		#expect(scratch[isUnicorn] == true)  // true: the key's default, read in another store
		#expect(Defaults[isUnicorn] == false)
	}

	@Test func aKeyInItsOwnStore() throws {
		let folder = try TemporaryDirectory()
		let group = Defaults.FileStore.at(folder.file("com.example.shared.plist"))
		let theme = Defaults.Key<String>("theme", default: "light", suite: group)
		group[theme] = "dark"
		#expect(Defaults[theme] == "dark")
		#expect(group.flush())
		#expect(FileManager.default.fileExists(atPath: folder.file("com.example.shared.plist").path))
	}
}
