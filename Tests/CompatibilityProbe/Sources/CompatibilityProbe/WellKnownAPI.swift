// Every public name of the well-known Defaults package (9.x) that this package keeps, used as code written for it
// uses it. It only has to compile: what each name means is checked by the package's own tests
// (`WellKnownAPICompatibilityTests`, `ComingFromDefaultsExampleTests`, `ObservationCallSyntaxTests`).
import Defaults
import Foundation

enum ProbeTheme: String, Codable, Defaults.Serializable, Defaults.PreferRawRepresentable { case light, dark }

struct ProbeSize: Codable, Defaults.Serializable {
	var width = 0
}

final class ProbeArchived: NSObject, NSSecureCoding, Defaults.Serializable, Defaults.PreferNSSecureCoding {
	static let supportsSecureCoding = true
	func encode(with coder: NSCoder) {}
	init?(coder: NSCoder) {}
	override init() {}
}

struct ProbeDoubling: Defaults.Bridge {
	typealias Value = Int
	typealias Serializable = Int
	func serialize(_ value: Int?) -> Int? { value.map { $0 * 2 } }
	func deserialize(_ object: Int?) -> Int? { object.map { $0 / 2 } }
}

struct ProbeCodableBridge: Defaults.CodableBridge {
	typealias Value = ProbeSize
}

struct ProbeBag<Element: Defaults.Serializable>: Defaults.CollectionSerializable {
	var elements: [Element]
	var startIndex: Int { elements.startIndex }
	var endIndex: Int { elements.endIndex }
	subscript(position: Int) -> Element { elements[position] }
	func index(after index: Int) -> Int { elements.index(after: index) }
	init(_ elements: [Element]) { self.elements = elements }
}

extension Defaults.Keys {
	static let probeTheme = Key<ProbeTheme>("probeTheme", default: .light)
	static let probeTitle = Key<String>("probeTitle", default: "", iCloud: true)
	static let probeSize = Key<ProbeSize>("probeSize", default: .init(), suite: .standard, iCloud: false)
	static let probeOptional = Key<String?>("probeOptional", iCloud: true)
	static let probeDynamic = Key<Int>("probeDynamic", iCloud: true) { 42 }
	static let probeDynamicLabelled = Key<Int>("probeDynamicLabelled", default: { 7 })
	static let probeExtras = Key<[String: Defaults.AnySerializable]>("probeExtras", default: [:])
	static let probeTags = Key<Set<String>>("probeTags", default: [])
	static let probeRange = Key<ClosedRange<Int>>("probeRange", default: 1...2)
	static let probeURL = Key<URL?>("probeURL")
	static let probeUUID = Key<UUID?>("probeUUID")
}

struct ProbeSettings {
	@Default(.probeTheme) var theme

	func reset() {
		_ = (_theme.defaultValue, _theme.isDefaultValue, _theme.wrappedValue)
		_theme.reset()
	}
}

func probeKeysAndValues() {
	Defaults[.probeTheme] = .dark
	_Defaults[.probeTitle] += "!"
	let key: Defaults._AnyKey = Defaults.Keys.probeTheme
	let typed: Defaults.Keys.Key<Int> = .probeDynamic
	_ = (key.name, key.suite, typed.defaultValue, Defaults.Keys.probeTheme.isDefaultValue)
	Defaults.Keys.probeTheme.reset()
	Defaults.reset(.probeTheme, .probeTitle)
	Defaults.reset([.probeTheme, .probeTitle])
	Defaults.reset("probeTheme", "probeTitle", suite: .standard)
	Defaults.reset(["probeTheme"], suite: .standard)
	Defaults.removeAll(suite: .standard)
	let legacy = UserDefaults(suiteName: "com.example.probe")!
	let count = Defaults.Key<Int>("count", default: 0, suite: legacy)
	legacy[count] += 1
	legacy.removeAll()
	let unique: Set<Defaults.Keys> = [.probeTheme, .probeTitle]
	let first: Defaults.Keys = .probeTheme
	_ = unique.contains(.probeTheme) && first == .probeTitle
	let settings = ProbeSettings()
	settings.theme = .light
	settings.reset()
	_ = _Default(.probeTitle).wrappedValue
}

func probeSerialization() {
	var extra: Defaults.AnySerializable = "text"
	extra = 1
	extra = 1.5
	extra = true
	extra = nil
	extra = [1, "two"]
	extra = ["one": 1]
	extra = Defaults.AnySerializable(3)
	extra.set(4)
	extra.set(Float(0.5), type: Float.self)
	let float: Float? = extra.get()
	_ = (float, extra.get(Int.self), extra == Defaults.AnySerializable(4), extra.hashValue)
	func isNil<Value: _DefaultsOptionalProtocol>(_ value: Value) -> Bool { value._defaults_isNil }
	_ = isNil(Int?.none) || isNil(extra)
	let bridge: any Defaults.Bridge<Int, Int> = ProbeDoubling()
	let serializable: any Defaults.Serializable<Defaults.URLBridge> = URL(filePath: "/tmp")
	_ = (bridge.serialize(1), serializable, ProbeCodableBridge().serialize(ProbeSize()))
	_ = (Int.isNativelySupportedType, ProbeSize.isNativelySupportedType, String.bridge.serialize("a"))
	let bag: any Defaults.CollectionSerializable<Int> = ProbeBag([1])
	let set: (any Defaults.SetAlgebraSerializable<Int>)? = nil
	func width<R: Defaults.Range>(_ range: R) -> R.Bound { range.upperBound }
	_ = (bag, set, width(1..<2))
	_ = Defaults.TopLevelCodableBridge<ProbeSize>.self
	_ = (Defaults.RawRepresentableBridge<ProbeTheme>.self, Defaults.NSSecureCodingBridge<ProbeArchived>.self)
	_ = (Defaults.OptionalBridge<Int>.self, Defaults.ArrayBridge<Int>.self, Defaults.SetBridge<Int>.self)
	_ = (Defaults.DictionaryBridge<String, Int>.self, Defaults.CollectionBridge<ProbeBag<Int>>.self)
	func setAlgebra<T: Defaults.SetAlgebraSerializable>(_: T.Type) where T.Element: Defaults.Serializable {
		_ = Defaults.SetAlgebraBridge<T>.self
	}
	_ = (Defaults.RangeBridge<Range<Int>>.self, ProbeBag<Int>.bridge, [Int].bridge, Set<Int>.bridge)
	_ = ([String: Int].bridge, Int?.bridge, ProbeTheme.bridge, ProbeSize.bridge, ProbeArchived.bridge)
	_ = (Defaults.UUIDBridge.self, Defaults.URLBridge.self)
}

func probeObservation() async {
	let observation: Defaults.Observation = Defaults.observe(.probeTheme, options: [.initial, .prior]) { change in
		_ = (change.newValue, change.oldValue, change.isPrior)
	}
	let group = Defaults.observe(keys: .probeTheme, .probeTitle) {}
	let options: Defaults.ObservationOptions = [Defaults.ObservationOption.initial]
	_ = options
	Defaults.withoutPropagation { Defaults[.probeTheme] = .light }
	observation.invalidate()
	group.invalidate()
	for await theme in Defaults.updates(.probeTheme) {
		_ = theme
		break
	}
	for await (theme, title) in Defaults.updates(.probeTheme, .probeTitle, initial: false) {
		_ = (theme, title)
		break
	}
	for await _ in Defaults.updates([.probeTheme, .probeTitle]) {
		break
	}
}

func probeICloud() async {
	Defaults.iCloud.add(.probeTheme, .probeTitle)
	Defaults.iCloud.add([.probeTheme])
	Defaults.iCloud.remove(.probeTheme)
	Defaults.iCloud.remove([Defaults.Keys.probeTitle])
	Defaults.iCloud.removeAll()
	Defaults.iCloud.isDebug = true
	_ = Defaults.iCloud.keys.contains(.probeTitle)
	await Defaults.iCloud.waitForSyncCompletion()
}
