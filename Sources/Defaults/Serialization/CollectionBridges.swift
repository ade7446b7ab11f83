import Foundation

/// The stored forms of a sequence's elements, or `nil` if one of them has none.
private func storedForms<Element: Defaults.Serializable>(of elements: some Sequence<Element>) -> [Any]? {
	var forms = [Any]()
	forms.reserveCapacity(elements.underestimatedCount)
	for element in elements {
		guard let form = try? Element.storedForm(of: element) else {
			return nil
		}
		forms.append(form)
	}
	return forms
}

extension Defaults {
	/// Stores an `Array` as an array of its elements' stored forms.
	///
	/// ```swift
	/// Key<[URL]>("recent", default: [])   // stored as an array of JSON strings
	/// ```
	public struct ArrayBridge<Element: Serializable>: Bridge, Sendable {
		/// Returns the elements' stored forms, or `nil` if one of them has none.
		public func serialize(_ value: [Element]?) -> [Any]? {
			value.flatMap { storedForms(of: $0) }
		}

		/// Returns the elements, or `nil` if one of them does not decode.
		public func deserialize(_ object: [Any]?) -> [Element]? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<[Element]> {
			BridgeDiagnosis.decodeElements(of: stored, as: Element.self)
		}
	}

	/// Stores a `Set` as an array of its elements' stored forms.
	///
	/// Strings and numbers are written in sorted order, so that the same set is always stored the same way.
	public struct SetBridge<Element: Serializable & Hashable>: Bridge, Sendable {
		/// Returns the elements' stored forms, or `nil` if one of them has none.
		public func serialize(_ value: Set<Element>?) -> [Any]? {
			value.flatMap { storedForms(of: $0) }.map { StableOrder.sorted($0) }
		}

		/// Returns the set, or `nil` if an element does not decode.
		public func deserialize(_ object: [Any]?) -> Set<Element>? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Set<Element>> {
			BridgeDiagnosis.decodeElements(of: stored, as: Element.self).map { Set($0) }
		}
	}

	/// Stores a `Dictionary` as a property-list dictionary of its values' stored forms.
	///
	/// Keys that are not strings are written as their `description` and read back with `init(_:)` of
	/// `LosslessStringConvertible`, so `[Int: String]` is stored as `["1": …]`.
	public struct DictionaryBridge<Key: LosslessStringConvertible & Hashable, Element: Serializable>: Bridge, Sendable {
		/// Returns the stored forms, or `nil` if a value has none.
		public func serialize(_ value: [Key: Element]?) -> [String: Any]? {
			guard let value else {
				return nil
			}
			var forms = [String: Any](minimumCapacity: value.count)
			for (key, element) in value {
				do {
					// A nil value (an optional, or an empty AnySerializable) has no entry in a property list.
					if let form = try Element.storedForm(of: element) {
						forms[key.description] = form
					}
				} catch {
					return nil
				}
			}
			return forms
		}

		/// Returns the dictionary, or `nil` if a key or a value does not decode.
		public func deserialize(_ object: [String: Any]?) -> [Key: Element]? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<[Key: Element]> {
			guard let object = stored as? [String: Any] else {
				return .failure("expected a dictionary, found \(BridgeDiagnosis.describe(stored))")
			}
			if Key.self == String.self, Element.isNativelySupportedType, let dictionary = object as? [Key: Element] {
				return .value(dictionary)
			}
			var dictionary = [Key: Element](minimumCapacity: object.count)
			// The entry reported is the first failing one in name order, whatever order the dictionary walks in:
			// after a failure only entries with smaller names are decoded.
			var failure: (name: String, reason: String)?
			for (name, form) in object {
				if let failure, name >= failure.name {
					continue
				}
				guard let key = Key(name) else {
					failure = (name, "the key '\(name)' is not a \(Key.self)")
					continue
				}
				switch Element.decoded(fromStoredForm: form) {
				case .value(let element): dictionary[key] = element
				case .failure(let reason): failure = (name, "value for '\(name)': " + reason)
				}
			}
			if let failure {
				return .failure(failure.reason)
			}
			return .value(dictionary)
		}
	}

	/// Stores a ``Defaults/CollectionSerializable`` collection as an array of its elements' stored forms.
	public struct CollectionBridge<Value: CollectionSerializable>: Bridge, Sendable
	where Value.Element: Defaults.Serializable {
		/// Returns the elements' stored forms, or `nil` if one of them has none.
		public func serialize(_ value: Value?) -> [Any]? {
			value.flatMap { storedForms(of: $0) }
		}

		/// Returns the collection built from the decoded elements.
		public func deserialize(_ object: [Any]?) -> Value? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			BridgeDiagnosis.decodeElements(of: stored, as: Value.Element.self).map { Value($0) }
		}
	}

	/// Stores a ``Defaults/SetAlgebraSerializable`` value as an array of its elements' stored forms.
	public struct SetAlgebraBridge<Value: SetAlgebraSerializable>: Bridge, Sendable
	where Value.Element: Defaults.Serializable {
		/// Returns the stored forms of `value.toArray()`.
		public func serialize(_ value: Value?) -> [Any]? {
			value.flatMap { storedForms(of: $0.toArray()) }
		}

		/// Returns the set built from the decoded elements.
		public func deserialize(_ object: [Any]?) -> Value? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			BridgeDiagnosis.decodeElements(of: stored, as: Value.Element.self).map { Value($0) }
		}
	}
}

/// An array of serializable elements is stored as an array of their stored forms (``Defaults/ArrayBridge``).
extension Array: Defaults.Serializable where Element: Defaults.Serializable {
	/// ``Defaults/ArrayBridge``.
	public static var bridge: Defaults.ArrayBridge<Element> { .init() }
}

/// A set is stored as an array of its elements' stored forms, in a stable order (``Defaults/SetBridge``).
extension Set: Defaults.Serializable where Element: Defaults.Serializable {
	/// ``Defaults/SetBridge``.
	public static var bridge: Defaults.SetBridge<Element> { .init() }
}

/// A dictionary is stored as a property-list dictionary of its values' stored forms; keys that are not
/// strings are stored as their description (``Defaults/DictionaryBridge``).
extension Dictionary: Defaults.Serializable where Key: LosslessStringConvertible, Value: Defaults.Serializable {
	/// ``Defaults/DictionaryBridge``.
	public static var bridge: Defaults.DictionaryBridge<Key, Value> { .init() }
}

extension Defaults.CollectionSerializable where Element: Defaults.Serializable {
	/// ``Defaults/CollectionBridge``.
	public static var bridge: Defaults.CollectionBridge<Self> { .init() }
}

extension Defaults.SetAlgebraSerializable where Element: Defaults.Serializable {
	/// ``Defaults/SetAlgebraBridge``.
	public static var bridge: Defaults.SetAlgebraBridge<Self> { .init() }
}

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.ArrayBridge: DecodingBridge {}
extension Defaults.SetBridge: DecodingBridge {}
extension Defaults.CollectionBridge: DecodingBridge {}
extension Defaults.SetAlgebraBridge: DecodingBridge {}
extension Defaults.DictionaryBridge: DecodingBridge {}

extension Array: StoredAsItIs where Element: Defaults.Serializable {
	static var isStoredAsItIs: Bool { Element.isNativelySupportedType }
}

extension Dictionary: StoredAsItIs where Key: LosslessStringConvertible, Value: Defaults.Serializable {
	/// String keys and values stored as they are.
	static var isStoredAsItIs: Bool { Key.self == String.self && Value.isNativelySupportedType }
}
