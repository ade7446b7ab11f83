import Defaults
import Foundation
import Testing

// Names the well-known Defaults package's public API has: this file compiles only if they exist here, with the same
// shapes. Each test also checks what the name means. Being in the package, it also sees `package` names: that each
// name is still public is checked by Tests/CompatibilityProbe, which .ci/api compiles as another package.

private enum CompatibilityTheme: String, Defaults.Serializable { case light, dark }

extension Defaults.Keys {
	fileprivate static let compatibilityOptional = Key<String?>("compatibilityOptional", iCloud: true)
	fileprivate static let compatibilityDynamic = Key<Int>("compatibilityDynamic", iCloud: true) { 42 }
	fileprivate static let compatibilityDynamicLabelled = Key<Int>(
		"compatibilityDynamicLabelled", iCloud: true, default: { 7 })
	fileprivate static let compatibilityInMemory = Key<CompatibilityTheme?>(
		"compatibilityInMemory", suite: Defaults.InMemoryStore(), iCloud: false)
}

@Suite(.serialized) struct WellKnownAPICompatibilityTests {
	@Test func everyInitializerTakesICloud() {
		defer {
			Defaults.iCloud.remove(.compatibilityOptional, .compatibilityDynamic, .compatibilityDynamicLabelled)
			Defaults.reset(.compatibilityOptional, .compatibilityDynamic, .compatibilityDynamicLabelled)
		}
		#expect(Defaults[.compatibilityOptional] == nil)
		#expect(Defaults[.compatibilityDynamic] == 42)
		#expect(Defaults[.compatibilityDynamicLabelled] == 7)
		#expect(Defaults[.compatibilityInMemory] == nil)
		let synced = Defaults.iCloud.keys
		#expect(synced.contains(.compatibilityOptional))
		#expect(synced.contains(.compatibilityDynamic))
		#expect(synced.contains(.compatibilityDynamicLabelled))
		#expect(!synced.contains(.compatibilityInMemory))
	}

	@Test func iCloudKeysFollowAddAndRemove() {
		let key = Defaults.Key<Bool>(uniqueKeyName("compatibilitySynced"), default: false)
		#expect(!Defaults.iCloud.keys.contains(key))
		Defaults.iCloud.add(key)
		#expect(Defaults.iCloud.keys.contains(key))
		Defaults.iCloud.remove(key)
		#expect(!Defaults.iCloud.keys.contains(key))
		Defaults.iCloud.add([key])
		#expect(Defaults.iCloud.keys.contains(key))
		Defaults.iCloud.remove([key])
		#expect(!Defaults.iCloud.keys.contains(key))
	}

	@Test(.scaledTimeLimit(minutes: 1)) func waitForSyncCompletionReturnsWithoutARemote() async {
		#expect(Defaults.iCloud.engine == nil)
		await Defaults.iCloud.waitForSyncCompletion()
	}

	@Test func isDebugCanBeTurnedOnAndOff() {
		#expect(Defaults.iCloud.isDebug == false)
		Defaults.iCloud.isDebug = true
		#expect(Defaults.iCloud.isDebug)
		Defaults.iCloud.isDebug = false
		#expect(Defaults.iCloud.isDebug == false)
	}

	@Test func theUnderscoredTypealiasesNameTheSameTypes() {
		let key = Defaults.Key<Int>(uniqueKeyName("compatibilityAlias"), default: 1, suite: Defaults.InMemoryStore())
		_Defaults[key] = 2
		#expect(Defaults[key] == 2)
		#expect(_Defaults.self == Defaults.self)
		let wrapper = _Default(key)
		#expect(wrapper.wrappedValue == 2)
	}

	@Test func optionalsAndAnySerializableSayWhetherTheyAreNil() {
		func isNil<Value: _DefaultsOptionalProtocol>(_ value: Value) -> Bool { value._defaults_isNil }
		#expect(isNil(Int?.none))
		#expect(!isNil(Int?.some(1)))
		#expect(isNil(nil as Defaults.AnySerializable))
		#expect(!isNil(Defaults.AnySerializable(1)))
		let value: Any = String?.none as Any
		#expect((value as? any _DefaultsOptionalProtocol)?._defaults_isNil == true)
	}

	struct Doubling: Defaults.Bridge {
		func serialize(_ value: Int?) -> Int? { value.map { $0 * 2 } }
		func deserialize(_ object: Int?) -> Int? { object.map { $0 / 2 } }
	}

	@Test func protocolsHavePrimaryAssociatedTypes() {
		let bridge: any Defaults.Bridge<Int, Int> = Doubling()
		#expect(bridge.serialize(2) == 4)
		let serializable: any Defaults.Serializable<Defaults.URLBridge> = URL(filePath: "/tmp")
		#expect(serializable is URL)
		let collection: (any Defaults.CollectionSerializable<Int>)? = nil
		let set: (any Defaults.SetAlgebraSerializable<Int>)? = nil
		#expect(collection == nil && set == nil)
	}

	@Test func rangeIsTheRangeProtocol() {
		func width<R: Defaults.Range>(_ range: R) -> R.Bound where R.Bound == Int {
			range.upperBound - range.lowerBound
		}
		#expect(width(2..<5) == 3)
		#expect(width(2...5) == 3)
	}
}
