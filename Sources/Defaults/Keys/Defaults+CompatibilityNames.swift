// Names the well-known Defaults package declares, so that code written for it (and its test suite) compiles here.

/// ``Defaults`` under a second name, for code that needs it where `Defaults` is shadowed (a module or a type of
/// that name).
///
/// ```swift
/// let volume = _Defaults[.volume]
/// ```
public typealias _Defaults = Defaults

/// ``Default`` under a second name, for code where `Default` is shadowed.
///
/// ```swift
/// final class Settings { @_Default(.volume) var volume: Double }
/// ```
public typealias _Default = Default

/// Lets generic code ask whether a value is `nil` without knowing its wrapped type: `Optional` and
/// ``Defaults/AnySerializable`` conform.
///
/// ```swift
/// func isUnset<Value: _DefaultsOptionalProtocol>(_ value: Value) -> Bool { value._defaults_isNil }
/// ```
public protocol _DefaultsOptionalProtocol: ExpressibleByNilLiteral {
	// swift-format-ignore: AlwaysUseLowerCamelCase
	/// Whether the value is `nil`.
	var _defaults_isNil: Bool { get }
}

/// `Optional` says whether it is `nil` to generic code that does not know its wrapped type.
extension Optional: _DefaultsOptionalProtocol {
	// swift-format-ignore: AlwaysUseLowerCamelCase
	/// Whether the optional is `nil`.
	public var _defaults_isNil: Bool { self == nil }
}

extension Defaults.AnySerializable: _DefaultsOptionalProtocol {
	// swift-format-ignore: AlwaysUseLowerCamelCase
	/// Whether it wraps no value (made from `nil`, or from a value that has no stored form).
	public var _defaults_isNil: Bool { propertyListValue == nil }
}

extension Defaults {
	/// ``Defaults/RangeSerializable`` under the well-known package's name: the ranges a key can store.
	///
	/// ```swift
	/// func width<R: Defaults.Range>(of range: R) -> R.Bound { … }
	/// ```
	public typealias Range = RangeSerializable
}
