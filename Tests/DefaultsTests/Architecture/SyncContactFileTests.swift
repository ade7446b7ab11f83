import Foundation
import Testing

/// Sync reaches the package's internals through one file, `SyncEngine+LocalStore.swift`, so that moving the write
/// primitive, the store runtime's commit taps or Storage's binary property-list reader means re-pointing one file.
@Suite struct SyncContactFileTests {
	static let contactFile = "SyncEngine+LocalStore.swift"
	/// Internal names of other layers that only the contact file may use.
	static let internals = [
		"BinaryPropertyList", "StoreRuntime", "SettingsFile", "FileStoreRegistry", "FileBackedStore", "FileStore",
	]

	@Test func onlyTheContactFileNamesStorageAndKeysInternals() throws {
		let folder = LayeringTests.sources.appending(path: "Sync")
		var leaks: [String] = []
		var contactUses: Set<String> = []
		for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
			let text = try String(contentsOf: folder.appending(path: file), encoding: .utf8)
			for name in Self.internals where Self.names(text, name) {
				if file == Self.contactFile {
					contactUses.insert(name)
				} else {
					leaks.append("\(file): \(name)")
				}
			}
		}
		#expect(leaks.isEmpty, "Sync files naming internals outside \(Self.contactFile): \(leaks)")
		#expect(contactUses.isSuperset(of: ["BinaryPropertyList", "StoreRuntime"]), "found only \(contactUses)")
	}

	/// Whether `text` has `name` as a whole identifier, not as part of a longer one (`isSettingsFileLost`).
	static func names(_ text: String, _ name: String) -> Bool {
		let isIdentifier = { (character: Character?) in
			character.map { $0.isLetter || $0.isNumber || $0 == "_" } ?? false
		}
		var rest = text[...]
		while let range = rest.range(of: name) {
			let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
			let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
			if !isIdentifier(before), !isIdentifier(after) {
				return true
			}
			rest = text[range.upperBound...]
		}
		return false
	}
}
