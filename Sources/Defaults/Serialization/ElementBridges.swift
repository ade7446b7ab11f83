import Foundation

extension Defaults.AnyBridge {
	/// Stores an array as an array of its elements' stored forms, each through `element`; an element that `element`
	/// cannot read is read through `olderForms`, in order.
	///
	/// A key of an array normally stores each element through the element type's own bridge. Naming the element's
	/// bridge pins the form of every element, as `bridge:` does for a single value, and the key lists older forms of
	/// an element the way `alsoReading:` lists older forms of a value:
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let price = Key<Money>("price", default: .zero, bridge: MoneyBridgeV2(), alsoReading: [.automatic])
	/// 	static let prices = Key<[Money]>(
	/// 		"prices", default: [], bridge: .array(of: .init(MoneyBridgeV2()), alsoReading: [.automatic]))
	/// }
	/// ```
	///
	/// A stored array in which some element was read through an older form reads as
	/// `.olderForm` in ``Defaults/storedState(of:)``, naming that form, so a migration's `.convert(key)` writes
	/// every element in the current form; until then reading changes nothing. The bridges compose with the other collections:
	/// `.dictionary(of: .array(of: money))` for `[String: [Money]]`, `.array(of: .optional(money))` for `[Money?]`.
	/// `.array(of: .automatic)` stores exactly what the key stores without a bridge.
	///
	/// An array cannot hold `nil`: writing a `nil` element writes nothing and reports the failure, as it does
	/// without an element bridge.
	public static func array<Element>(
		of element: Defaults.AnyBridge<Element>, alsoReading olderForms: [Defaults.AnyBridge<Element>] = []
	) -> Self where Value == [Element] {
		let forms = ElementForms(current: element, older: olderForms, typeName: "\(Value.self)")
		return Self(
			name: "array of \(element.name)",
			encode: { value throws(Defaults.SerializationError) in
				try forms.normalized(try forms.storedForms(of: value))
			},
			read: { stored in forms.readElements(of: stored) })
	}

	/// Stores a set as an array of its elements' stored forms, each through `element`, in a stable order; an element
	/// that `element` cannot read is read through `olderForms`, in order.
	///
	/// ```swift
	/// static let tags = Key<Set<Tag>>("tags", default: [], bridge: .set(of: .rawValue, alsoReading: [.json]))
	/// ```
	///
	/// The order is the one sets are always stored in, so `.set(of: .automatic)` stores exactly what the key stores
	/// without a bridge. See ``array(of:alsoReading:)`` for older forms and nesting.
	public static func set<Element>(
		of element: Defaults.AnyBridge<Element>, alsoReading olderForms: [Defaults.AnyBridge<Element>] = []
	) -> Self where Value == Set<Element> {
		let forms = ElementForms(current: element, older: olderForms, typeName: "\(Value.self)")
		return Self(
			name: "set of \(element.name)",
			encode: { value throws(Defaults.SerializationError) in
				try forms.normalized(StableOrder.sorted(try forms.storedForms(of: value)))
			},
			read: { stored in
				let reading = forms.readElements(of: stored)
				return (reading.result.map { Set($0) }, reading.olderForm)
			})
	}

	/// Stores a dictionary as a property-list dictionary of its values' stored forms, each through `element`; a value
	/// that `element` cannot read is read through `olderForms`, in order.
	///
	/// ```swift
	/// static let pricesByShop = Key<[String: [Money]]>(
	/// 	"pricesByShop", default: [:], bridge: .dictionary(of: .array(of: .init(MoneyBridgeV2()))))
	/// ```
	///
	/// Names are stored as their `description` and read back with `init(_:)`, and a value whose stored form is `nil`
	/// (an optional that is `nil`) has no entry, as without an element bridge; `.dictionary(of: .automatic)` stores
	/// exactly what the key stores without one. See ``array(of:alsoReading:)`` for older forms and nesting.
	public static func dictionary<Name: LosslessStringConvertible & Hashable, Element>(
		of element: Defaults.AnyBridge<Element>, alsoReading olderForms: [Defaults.AnyBridge<Element>] = []
	) -> Self where Value == [Name: Element] {
		let forms = ElementForms(current: element, older: olderForms, typeName: "\(Value.self)")
		return Self(
			name: "dictionary of \(element.name)",
			encode: { value throws(Defaults.SerializationError) in
				var stored = [String: Any](minimumCapacity: value.count)
				for (name, element) in value {
					if let form = try forms.storedForm(of: element, at: "the value for '\(name)'") {
						stored[name.description] = form
					}
				}
				return try forms.normalized(stored)
			},
			read: { stored in forms.readEntries(of: stored) })
	}

	/// `bridge` for the wrapped value of an optional; `nil` has no stored form.
	///
	/// For an optional inside a collection: `Key<[Money?]>("slots", default: [], bridge: .array(of:
	/// .optional(money)))`. A key of an optional names the wrapped value's bridge directly:
	/// `Key<Money?>("price", bridge: money)`.
	public static func optional<Wrapped>(_ bridge: Defaults.AnyBridge<Wrapped>) -> Self where Value == Wrapped? {
		Self(
			name: bridge.name,
			encode: { value throws(Defaults.SerializationError) in
				guard let value else {
					return nil
				}
				return try bridge.storedForm(of: value)
			},
			read: { stored in
				let reading = bridge.reading(storedForm: stored)
				return (reading.result.map { .some($0) }, reading.olderForm)
			})
	}
}

/// The forms an element of a collection bridge is written in and read from: the element bridge, then its older
/// forms in order.
private struct ElementForms<Element> {
	let current: Defaults.AnyBridge<Element>
	let older: [Defaults.AnyBridge<Element>]
	/// The collection's type, for messages.
	let typeName: String

	/// The stored form of `element` (`nil` for an optional that is `nil`), or an error that says which element
	/// (`place`) failed and why.
	func storedForm(
		of element: Element, at place: @autoclosure () -> String
	) throws(Defaults.SerializationError)
		-> Any?
	{
		do throws(Defaults.SerializationError) {
			return try current.storedForm(of: element)
		} catch {
			throw Defaults.SerializationError(typeName: typeName, reason: "\(place()): \(error.reason)")
		}
	}

	/// The stored forms of `elements`, which must all have one: an array holds no `nil`.
	func storedForms(of elements: some Collection<Element>) throws(Defaults.SerializationError) -> [Any] {
		var forms = [Any]()
		forms.reserveCapacity(elements.count)
		for (index, element) in elements.enumerated() {
			guard let form = try storedForm(of: element, at: "element \(index)") else {
				throw Defaults.SerializationError(
					typeName: typeName, reason: "element \(index) is nil, and a stored array cannot hold nil")
			}
			forms.append(form)
		}
		return forms
	}

	/// `collection` of normalised forms, normalised as a whole: the depth limit counts from the collection's root.
	func normalized(_ collection: Any) throws(Defaults.SerializationError) -> Any {
		do throws(Defaults.PropertyList.Error) {
			return try Defaults.PropertyList.normalize(collection)
		} catch {
			throw Defaults.SerializationError(typeName: typeName, reason: error.description)
		}
	}

	/// The element `form` stands for: through the current form, else the first older form that reads it, named.
	func read(_ form: Any) -> Defaults.AnyBridge<Element>.Reading {
		let reading = current.reading(storedForm: form)
		guard case .failure(let reason) = reading.result, !older.isEmpty else {
			return reading
		}
		var refusals: [String] = []
		for bridge in older {
			let olderReading = bridge.reading(storedForm: form)
			switch olderReading.result {
			case .value(let element): return (.value(element), bridge.name)
			case .failure(let olderReason): refusals.append("\(bridge.name): \(olderReason)")
			}
		}
		return (.failure(reason + " (also tried " + refusals.joined(separator: "; ") + ")"), nil)
	}

	/// The elements an array of stored forms stands for, and the first older form one of them was read in; or why
	/// the first failing element does not decode.
	func readElements(of stored: Any) -> (result: DecodeResult<[Element]>, olderForm: String?) {
		guard let forms = stored as? [Any] else {
			return (.failure("expected an array, found \(BridgeDiagnosis.describe(stored))"), nil)
		}
		var elements = [Element]()
		elements.reserveCapacity(forms.count)
		var olderForm: String?
		for (index, form) in forms.enumerated() {
			let reading = read(form)
			switch reading.result {
			case .value(let element):
				elements.append(element)
				olderForm = olderForm ?? reading.olderForm
			case .failure(let reason):
				return (.failure("element \(index): " + reason), nil)
			}
		}
		return (.value(elements), olderForm)
	}

	/// The dictionary a property-list dictionary stands for, and the first older form one of its values was read in;
	/// or why the entry first in name order that fails does not decode (as ``Defaults/DictionaryBridge`` reports).
	func readEntries<Name: LosslessStringConvertible & Hashable>(
		of stored: Any
	) -> (result: DecodeResult<[Name: Element]>, olderForm: String?) {
		guard let object = stored as? [String: Any] else {
			return (.failure("expected a dictionary, found \(BridgeDiagnosis.describe(stored))"), nil)
		}
		var dictionary = [Name: Element](minimumCapacity: object.count)
		var olderForm: (name: String, form: String)?
		var failure: (name: String, reason: String)?
		for (name, form) in object {
			if let failure, name >= failure.name {
				continue
			}
			guard let key = Name(name) else {
				failure = (name, "the key '\(name)' is not a \(Name.self)")
				continue
			}
			let reading = read(form)
			switch reading.result {
			case .value(let element):
				dictionary[key] = element
				// The form named is the first in name order, whatever order the dictionary walks in.
				if let form = reading.olderForm, olderForm.map({ name < $0.name }) ?? true {
					olderForm = (name, form)
				}
			case .failure(let reason):
				failure = (name, "value for '\(name)': " + reason)
			}
		}
		if let failure {
			return (.failure(failure.reason), nil)
		}
		return (.value(dictionary), olderForm?.form)
	}
}
