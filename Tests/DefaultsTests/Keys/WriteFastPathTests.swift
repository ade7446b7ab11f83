import Foundation
import Testing

@testable import Defaults

/// A value that is its own stored form is written without its bridge: what reaches the store must be exactly what the
/// bridge would have written, and only such keys may skip it.
@Suite struct WriteFastPathTests {
	let store = Defaults.InMemoryStore()

	/// Writes `value` through `Defaults[key]` and through the store's subscript, and checks that the store holds what
	/// the type's bridge makes of it.
	func expectStoredAsTheBridgeWould<Value: Defaults.Serializable & Equatable>(
		_ value: Value, default defaultValue: Value, sourceLocation: SourceLocation = #_sourceLocation
	) throws {
		let key = Defaults.Key<Value>("value", default: defaultValue, suite: store)
		#expect(key.storesAsIs, sourceLocation: sourceLocation)
		let expected = try #require(try Value.storedForm(of: value), sourceLocation: sourceLocation)
		Defaults[key] = value
		let viaDefaults = try #require(store.storedValue(forKey: "value"), sourceLocation: sourceLocation)
		#expect(
			Defaults.PropertyList.isEqual(viaDefaults, expected), "\(type(of: viaDefaults))",
			sourceLocation: sourceLocation)
		#expect(type(of: viaDefaults) == type(of: expected), sourceLocation: sourceLocation)
		store[key] = defaultValue
		store[key] = value
		let viaStore = try #require(store.storedValue(forKey: "value"), sourceLocation: sourceLocation)
		#expect(Defaults.PropertyList.isEqual(viaStore, expected), sourceLocation: sourceLocation)
		#expect(Defaults[key] == value, sourceLocation: sourceLocation)
	}

	@Test func scalarsAreStoredAsTheirBridgesWouldStoreThem() throws {
		try expectStoredAsTheBridgeWould(42, default: 0)
		try expectStoredAsTheBridgeWould(true, default: false)
		try expectStoredAsTheBridgeWould(1.5, default: 0)
		try expectStoredAsTheBridgeWould("text", default: "")
		try expectStoredAsTheBridgeWould(Data([1, 2, 3]), default: Data())
		try expectStoredAsTheBridgeWould(Date(timeIntervalSinceReferenceDate: 1.25), default: Date.distantPast)
	}

	@Test func onlyTheTypesOwnBridgeOfANonOptionalScalarSkipsTheBridge() {
		#expect(!Defaults.Key<Int?>("optional", suite: store).storesAsIs)
		#expect(!Defaults.Key<[Int]>("array", default: [], suite: store).storesAsIs)
		#expect(!Defaults.Key<Int8>("narrow", default: 0, suite: store).storesAsIs)
		#expect(!Defaults.Key<Float>("float", default: 0, suite: store).storesAsIs)
		#expect(
			!Defaults.Key<Int>("pinned", default: 0, suite: store, bridge: .init(Defaults.IntegerBridge<Int>()))
				.storesAsIs)
	}

	@Test func aWriteThroughTheFastPathIsObservedCountedAndTapped() {
		let key = Defaults.Key<Int>("level", default: 1, suite: store)
		let heard = Recorder<Int>()
		let observation = Defaults.observe(key, options: []) { heard.append($0.newValue) }
		let tapped = Recorder<String>()
		let removeTap = StoreRuntime.of(store).addCommitTaps(names: ["level"]) { tapped.append($0) }
		let before = StoreRuntime.of(store).changeCounter!.value
		Defaults[key] = 2
		store[key] = 3
		#expect(heard.values == [2, 3])
		#expect(tapped.values == ["level", "level"])
		#expect(StoreRuntime.of(store).changeCounter!.value >= before + 2)
		#expect(Defaults[key] == 3)
		removeTap()
		observation.invalidate()
	}
}
