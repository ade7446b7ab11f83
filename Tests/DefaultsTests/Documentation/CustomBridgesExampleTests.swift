// Mirrors the DocC article "Writing a custom bridge" (Sources/Defaults/Documentation.docc/CustomBridges.md): the same
// type, bridge, keys and test, run. Keep the two in step. Differences: declarations are `private`/`fileprivate`, and the
// keys on the standard store have a `customBridge` prefix in their stored names so that they meet no other test's.
import Defaults
import Testing

private struct RGBColor: Equatable, Hashable {
	var red: UInt8
	var green: UInt8
	var blue: UInt8
}

private struct RGBColorBridge: Defaults.Bridge {
	typealias Value = RGBColor
	typealias Serializable = String

	func serialize(_ value: RGBColor?) -> String? {
		guard let value else { return nil }
		return "#"
			+ [value.red, value.green, value.blue].map { byte in
				let hex = String(byte, radix: 16, uppercase: true)
				return hex.count == 1 ? "0" + hex : hex
			}.joined()
	}

	func deserialize(_ object: String?) -> RGBColor? {
		guard let object, object.count == 7, object.first == "#",
			let number = UInt32(object.dropFirst(), radix: 16)
		else { return nil }
		return RGBColor(
			red: UInt8(number >> 16 & 0xFF), green: UInt8(number >> 8 & 0xFF), blue: UInt8(number & 0xFF))
	}
}

extension RGBColor: Defaults.Serializable {
	static let bridge = RGBColorBridge()
}

extension Defaults.Keys {
	fileprivate static let accent = Key<RGBColor>(
		"customBridgeAccent", default: RGBColor(red: 0, green: 122, blue: 255))
	fileprivate static let palette = Key<[RGBColor]>("customBridgePalette", default: [])
	fileprivate static let labelColors = Key<[String: RGBColor]>("customBridgeLabelColors", default: [:])
}

@Test func rgbColorBridge() {
	let bridge = RGBColorBridge()
	let orange = RGBColor(red: 255, green: 128, blue: 0)

	#expect(bridge.serialize(orange) == "#FF8000")  // the stored form, pinned
	#expect(bridge.deserialize("#FF8000") == orange)  // and read back
	#expect(bridge.deserialize("#FF80") == nil)  // bad input: nil, no crash
	#expect(bridge.deserialize("orange") == nil)

	let store = Defaults.InMemoryStore()
	let palette = Defaults.Key<[RGBColor]>("palette", default: [], suite: store)
	store[palette] = [orange]
	#expect(store.storedValue(forKey: "palette") as? [String] == ["#FF8000"])
	#expect(store[palette] == [orange])

	try? store.write("not a color", forKey: "accent")
	let accent = Defaults.Key<RGBColor>("accent", default: orange, suite: store)
	#expect(store[accent] == orange)  // the default…
	#expect(store.storedValue(forKey: "accent") as? String == "not a color")  // …and the data is kept
}

@Suite(.serialized) struct CustomBridgesExampleTests {
	@Test func useItAlsoInCollections() {
		defer { Defaults.reset(.accent, .palette, .labelColors) }
		let store = Defaults.standardStore

		Defaults[.accent] = RGBColor(red: 255, green: 128, blue: 0)  // stored as "#FF8000"
		Defaults[.palette] = [RGBColor(red: 0, green: 0, blue: 0)]  // stored as ["#000000"]
		Defaults[.labelColors]["urgent"] = RGBColor(red: 255, green: 0, blue: 0)  // stored as ["urgent": "#FF0000"]

		#expect(store.storedValue(forKey: "customBridgeAccent") as? String == "#FF8000")
		#expect(store.storedValue(forKey: "customBridgePalette") as? [String] == ["#000000"])
		#expect(store.storedValue(forKey: "customBridgeLabelColors") as? [String: String] == ["urgent": "#FF0000"])
	}

	@Test func aBridgePinnedOnAKey() {
		let store = Defaults.InMemoryStore()
		let border = Defaults.Key<RGBColor>(
			"border", default: RGBColor(red: 0, green: 0, blue: 0), suite: store, bridge: .init(RGBColorBridge()))
		store[border] = RGBColor(red: 1, green: 2, blue: 3)
		#expect(store.storedValue(forKey: "border") as? String == "#010203")
		let wrapped = Defaults.AnyBridge(RGBColorBridge())
		#expect(wrapped.serialize(RGBColor(red: 1, green: 2, blue: 3)) as? String == "#010203")
	}
}
