import Foundation

// Where a property-list value is expected from a user (a store's `write` in Keys/Store+Write.swift, an in-memory
// store's first values, the tool's imports), a `Serializable` value inside a collection is accepted and stored in
// its bridge's form. Storage itself knows only property-list values; this is the one place that hands it the
// conversion.

extension Defaults.PropertyList {
	/// Converts `value` to its normalised property-list shape.
	///
	/// Integers of every width become `Int` (or `UInt64` above `Int.max`), `Float` and `CGFloat` become
	/// `Double`, arrays and dictionaries are converted element by element, and a ``Defaults/Serializable``
	/// value met inside a collection is serialised through its bridge.
	///
	/// - Throws: ``Error`` for anything else: `Decimal`, `nil` inside a collection, a dictionary with keys that
	///   are not strings, a type with no property-list form, a date that is not a number of seconds (NaN or
	///   infinite), containers nested deeper than 255 levels. Nothing is converted silently into another
	///   form.
	package static func normalize(_ value: Any) throws(Error) -> Any {
		try normalize(value, depth: 0, convertingOther: serializableStoredForm)
	}

	/// The stored form of a ``Defaults/Serializable`` value, through its bridge; `nil` for any other value.
	static func serializableStoredForm(_ value: Any) throws(Error) -> Any? {
		guard let serializable = value as? any Defaults.Serializable else {
			return nil
		}
		return try storedForm(of: serializable)
	}

	private static func storedForm<Value: Defaults.Serializable>(of serializable: Value) throws(Error) -> Any {
		do {
			guard let stored = try Value.storedForm(of: serializable) else {
				throw Error(path: "", reason: "nil has no property-list form inside a collection")
			}
			return stored
		} catch let error as Error {
			throw error
		} catch {
			throw Error(path: "", reason: "\(error)")
		}
	}
}

extension Defaults.InMemoryStore {
	/// Creates a store holding `values`, which are normalised first: for the `defaults` command and the tests (a
	/// program seeds a store with its keys, or with ``Defaults/Store/write(_:forKey:)``).
	///
	/// ```swift
	/// let store = try Defaults.InMemoryStore(values: ["volume": 7, "recent": ["a", "b"]])
	/// ```
	///
	/// - Throws: ``Defaults/PropertyList/Error`` if a value is not a property-list value.
	package convenience init(values: [String: Any] = [:]) throws {
		self.init(normalizedValues: try Defaults.PropertyList.normalize(values) as? [String: Any] ?? [:])
	}
}
