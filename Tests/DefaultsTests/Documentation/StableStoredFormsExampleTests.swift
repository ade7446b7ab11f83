// Mirrors the DocC article "Keeping stored forms stable" (Sources/Defaults/Documentation.docc/StableStoredForms.md):
// the same code, run. Keep the two in step. Differences: keys are `fileprivate` with a `stable` prefix in their stored
// names (they live in the standard store); the snapshot is written to a temporary folder; the migration runs on an
// in-memory store (`suite: store`) rather than on the standard store; the pinned keys are called `pinnedMime` and
// `pinnedWindow` (`mime` and `window` are taken in this test target); the failure handler is called, not installed.
import Defaults
import Foundation
import Synchronization
import Testing

private enum Mime: String, Codable, Defaults.Serializable { case json = "application/json", text = "text/plain" }
private struct Window: Codable, Defaults.Serializable { var width = 800, height = 600 }
private struct Money: Hashable, Codable, Defaults.Serializable { var cents: Int, currency: String }

/// "1234 EUR": the form the app settles on. Money was stored as JSON text before, the form Codable gives it.
private struct MoneyTextBridge: Defaults.Bridge {
	func serialize(_ value: Money?) -> String? { value.map { "\($0.cents) \($0.currency)" } }

	func deserialize(_ object: String?) -> Money? {
		guard let parts = object?.split(separator: " "), parts.count == 2, let cents = Int(parts[0]) else { return nil }
		return Money(cents: cents, currency: String(parts[1]))
	}
}

private let money = Defaults.AnyBridge(MoneyTextBridge())

extension Defaults.Keys {
	// "application/json"
	fileprivate static let pinnedMime = Key<Mime>("stableMime", default: .text, bridge: .rawValue)
	fileprivate static let pinnedWindow = Key<Window>("stableWindow", default: Window(), bridge: .json)  // JSON text
	// Was stored as JSON data by another library; stored as JSON text from now on.
	fileprivate static let layout = Key<Window>("stableLayout", default: Window(), alsoReading: [.jsonData])

	fileprivate static let price = Key<Money>(
		"stablePrice", default: Money(cents: 0, currency: "EUR"), bridge: money, alsoReading: [.json])
	fileprivate static let prices = Key<[Money]>(
		"stablePrices", default: [], bridge: .array(of: money, alsoReading: [.json]))
	fileprivate static let pricesByShop = Key<[String: [Money]]>(
		"stablePricesByShop", default: [:], bridge: .dictionary(of: .array(of: money, alsoReading: [.json])))
	fileprivate static let slots = Key<[Money?]>(
		"stableSlots", default: [], bridge: .array(of: .optional(money), alsoReading: [.optional(.json)]))
}

@Suite(.serialized) struct StableStoredFormsExampleTests {
	@Test func pinTheFormOnTheKey() {
		defer { Defaults.reset(.pinnedMime, .pinnedWindow) }
		Defaults[.pinnedMime] = .json
		Defaults[.pinnedWindow] = Window(width: 1, height: 2)
		#expect(Defaults.standardStore.storedValue(forKey: "stableMime") as? String == "application/json")
		#expect(Defaults.standardStore.storedValue(forKey: "stableWindow") as? String == #"{"height":2,"width":1}"#)
	}

	@Test func settingsKeepTheirStoredForms() throws {
		let folder = try TemporaryDirectory()
		let store = Defaults.InMemoryStore()
		store[Defaults.Key<Mime>("mime", default: .text, suite: store, bridge: .rawValue)] = .json
		store[Defaults.Key<Window>("window", default: Window(), suite: store)] = Window(width: 640, height: 480)

		let snapshot = folder.file("Settings.plist")  // committed next to your tests
		if !FileManager.default.fileExists(atPath: snapshot.path) {
			try Defaults.Snapshot.write(of: store, to: snapshot)  // the first run records it
		}
		try Defaults.Snapshot.verify(store, against: snapshot)  // later runs compare

		// A changed form is a mismatch that names the key.
		store[Defaults.Key<Mime>("mime", default: .text, suite: store)] = .json  // the type's own form: JSON text
		#expect(throws: Defaults.Snapshot.Error.self) { try Defaults.Snapshot.verify(store, against: snapshot) }
	}

	@Test func readOldForms() throws {
		defer { Defaults.reset(.layout) }
		let versionKey = "stableLayoutVersion"
		defer { Defaults.reset(versionKey) }
		let data = try JSONEncoder().encode(Window(width: 10, height: 20))
		try Defaults.standardStore.write(data, forKey: "stableLayout")  // JSON data, as another library stored it
		#expect(Defaults[.layout].width == 10)

		guard case .olderForm(_, let bridgeName) = Defaults.storedState(of: .layout) else {
			Issue.record("expected an older form")
			return
		}
		#expect(!bridgeName.isEmpty)
		// The article's step (rewritten now), under a version key of this test's own.
		let reached = try Defaults.migrate(
			[.init(version: 1, "Layout: JSON data to JSON text", .convert(.layout))], versionKey: versionKey)
		#expect(reached == 1)

		switch Defaults.storedState(of: .layout) {
		case .absent, .olderForm, .undecodable: Issue.record("expected the current form")
		case .current(let window): #expect(window.height == 20)
		}
	}

	@Test func pinTheFormOfEveryElement() throws {
		defer { Defaults.reset(.price, .prices, .pricesByShop, .slots) }
		let store = Defaults.standardStore
		let euros = Money(cents: 1234, currency: "EUR")
		Defaults[.prices] = [euros]  // stored as ["1234 EUR"]
		#expect(store.storedValue(forKey: "stablePrices") as? [String] == ["1234 EUR"])
		Defaults[.price] = euros
		#expect(store.storedValue(forKey: "stablePrice") as? String == "1234 EUR")

		// Elements stored as JSON text before the bridge was pinned: read, and rewritten when asked.
		let json = #"{"cents":5,"currency":"USD"}"#
		try store.write(["shop": ["1234 EUR", json]], forKey: "stablePricesByShop")
		try store.write([json], forKey: "stableSlots")
		#expect(Defaults[.pricesByShop] == ["shop": [euros, Money(cents: 5, currency: "USD")]])
		#expect(Defaults[.slots] == [Money(cents: 5, currency: "USD")])
		guard case .olderForm = Defaults.storedState(of: .pricesByShop) else {
			Issue.record("an element in JSON text is an older form")
			return
		}
		#expect(Defaults.Keys.pricesByShop.rewriteInCurrentForm())
		#expect(
			store.storedValue(forKey: "stablePricesByShop") as? [String: [String]] == ["shop": ["1234 EUR", "5 USD"]])
	}

	@Test func migrations() throws {
		let store = try Defaults.InMemoryStore(values: [
			"mainWindow": #"{"height":1,"width":2}"#, "thumbnailCache": Data([1, 2, 3]),
			"stableLayout": try JSONEncoder().encode(Window(width: 3, height: 4)),
		])
		try Defaults.migrate(
			[
				.init(version: 1, "Rename the window key", .rename(from: "mainWindow", to: "window")),
				.init(version: 2, "Layout: JSON data to JSON text", .convert(.layout)),  // uses the key's alsoReading
				.init(version: 3, "Drop the thumbnail cache", .remove("thumbnailCache")),
			], store: store)
		#expect(store.storedValue(forKey: "window") as? String == #"{"height":1,"width":2}"#)
		#expect(store.storedValue(forKey: "mainWindow") == nil)
		#expect(store.storedValue(forKey: "stableLayout") as? String == #"{"height":4,"width":3}"#)
		#expect(store.storedValue(forKey: "thumbnailCache") == nil)
		#expect(try Defaults.migrationVersion(of: store) == 3)
	}

	@Test func badDataIsNeverDestroyed() throws {
		FailureRecorder.start()  // the process-wide handler of the tests; this test does not replace it
		let store = Defaults.InMemoryStore()
		let name = uniqueKeyName("stableBroken")
		try store.write("{\"width\":1}", forKey: name)
		let broken = Defaults.Key<Window>(name, default: Window(), suite: store)
		#expect(store[broken].width == 800)  // the default
		#expect(store.storedValue(forKey: name) as? String == "{\"width\":1}")  // kept
		guard case .undecodable(let error) = broken.storedState() else {
			Issue.record("expected undecodable")
			return
		}
		#expect(error.storedValue as? String == "{\"width\":1}")
		let failures = FailureRecorder.failures(forKey: name)
		#expect(failures.count == 1)

		// The article's handler, called with the reported failure rather than installed.
		let printed = LockedState<[String]>([])
		let failureHandler: @Sendable (Defaults.Failure) -> Void = { failure in
			if failure.reason == .decodingFailed {
				printed.withLock {
					$0.append("\(failure.keyName): \(failure.decodingError?.reason ?? failure.description)")
				}
			}
		}
		failures.forEach(failureHandler)
		#expect(printed.withLock { $0 } == ["\(name): \(error.reason)"])
	}
}
