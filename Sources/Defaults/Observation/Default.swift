import Foundation

/// A property backed by a key: reading and writing the property reads and writes the key's store.
///
/// Use it in any class or struct. There is no copy of the value in the property, so every `@Default` property with
/// the same key, in any object, reads what any of them last wrote.
///
/// ```swift
/// final class Settings {
/// 	@Default(.level) var level: Int
/// }
///
/// let settings = Settings()
/// settings.level += 1                   // writes Defaults[.level]
/// settings.$level.reset()               // back to the default
/// for await level in settings.$level.updates { print(level) }
/// ```
///
/// The projected value (`$level`) is the wrapper itself: it gives ``reset()``, ``updates``, ``defaultValue`` and
/// ``isDefaultValue``. For anything else, such as an atomic `Defaults.update`, name the key the property was
/// declared with.
@propertyWrapper
public struct Default<Value: Defaults.Serializable>: Sendable {
	/// The key the property reads and writes.
	package let key: Defaults.Key<Value>

	/// Creates a property backed by `key`.
	public init(_ key: Defaults.Key<Value>) {
		self.key = key
	}

	/// The key's current value; setting it writes the key's store (and tells its observers).
	public var wrappedValue: Value {
		get { Defaults[key] }
		nonmutating set { Defaults[key] = newValue }
	}

	/// The wrapper itself, for `$property.reset()`, `$property.updates` and the like.
	public var projectedValue: Self { self }

	/// The key's default value.
	public var defaultValue: Value { key.defaultValue }

	/// Removes the stored value, so that the property reads as the key's default again.
	public func reset() {
		key.reset()
	}

	/// The property's value now and after each change, from anywhere; see ``Defaults/updates(_:initial:)->Defaults.Updates<Value>``.
	///
	/// ```swift
	/// for await level in settings.$level.updates { print(level) }
	/// ```
	public var updates: Defaults.Updates<Value> {
		Defaults.updates(key)
	}
}

extension Default where Value: Equatable {
	/// Whether the property currently reads as the key's default value.
	public var isDefaultValue: Bool { key.isDefaultValue }
}
