import Defaults
import DefaultsStoreConformance
import Foundation
import Testing

/// Every store of the package keeps the store seam's contract, checked by the public conformance kit; and the kit
/// does fail a store that breaks it.
@Suite(.scaledTimeLimit(minutes: 1)) struct StoreConformanceTests {
	@Test func theInMemoryStoreConforms() throws {
		try StoreConformance.check(outsideChange: { store, key, value in
			store.setStoredValue(value, forKey: key)
			store.reportOutsideChanges([key])
		}) {
			Defaults.InMemoryStore()
		}
	}

	@Test func theFileStoreConformsIncludingChangesByAnotherProcess() throws {
		let folder = try TemporaryDirectory()
		try StoreConformance.check(outsideChange: { store, key, value in
			// What another process of this package does: a whole new file renamed over the old one.
			let url = (store as! Defaults.FileStore).url
			var values =
				(try? PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil))
				as? [String: Any] ?? [:]
			values[key] = value
			let data = try PropertyListSerialization.data(fromPropertyList: values, format: .binary, options: 0)
			try data.write(to: url, options: .atomic)
		}) {
			Defaults.FileStore.at(folder.file("store-\(UUID().uuidString).plist"))
		}
	}

	@Test func theUserDefaultsStoreConforms() throws {
		var names: [String] = []
		defer {
			for name in names { UserDefaults.standard.removePersistentDomain(forName: name) }
		}
		try StoreConformance.check {
			let name = "StoreConformance-\(UUID().uuidString)"
			names.append(name)
			return UserDefaults(suiteName: name)!
		}
	}

	@Test func aStoreThatClaimsToReportEveryChangeButDoesNotFailsTheKit() {
		#expect {
			try StoreConformance.check(outsideChange: { store, key, value in
				(store as! SilentStore).values.setStoredValue(value, forKey: key)  // changed, but never reported
			}) {
				SilentStore()
			}
		} throws: { error in
			(error as? StoreConformance.Failure)?.violations.contains { $0.message.contains("reportsEveryChange") }
				?? false
		}
	}

	@Test func aStoreThatBreaksTheContractFailsTheKit() {
		#expect {
			try StoreConformance.check(outsideChange: { store, key, value in
				store.setStoredValue(value, forKey: key)  // changed, but never reported
			}) {
				ForgetfulStore()
			}
		} throws: { error in
			guard let failure = error as? StoreConformance.Failure else {
				return false
			}
			let checks = Set(failure.violations.map(\.check))
			return checks.isSuperset(of: ["round trip", "removal", "registration", "outside changes"])
		}
	}
}

/// Claims (by default) to report every change, but changes values behind the package's back without reporting:
/// keys would keep reading stale values.
private final class SilentStore: InMemoryBackedStore, @unchecked Sendable {
	let values = Defaults.InMemoryStore()
}

/// Breaks the contract on purpose: integers come back as strings, removals are ignored, registrations are lost,
/// and outside changes are never reported.
private final class ForgetfulStore: Defaults.Store, @unchecked Sendable {
	private let lock = NSLock()
	private var values: [String: Any] = [:]

	func storedValue(forKey key: String) -> Any? {
		lock.withLock { values[key].map { $0 is Int ? "\($0)" : $0 } }
	}

	func setStoredValue(_ value: Any, forKey key: String) {
		lock.withLock { values[key] = value }
	}

	func removeStoredValue(forKey key: String) {}

	func registerDefaultValues(_ values: [String: Any]) {}

	func storedKeys() -> [String] {
		lock.withLock { Array(values.keys) }
	}

	func flush() -> Bool { true }
}
