import Foundation

extension Defaults {
	/// Stores a property-list type as it is: `String`, `Data`, `Date`.
	struct NativeBridge<Value>: Bridge, Sendable {
		/// Returns `value` unchanged.
		func serialize(_ value: Value?) -> Value? { value }

		/// Returns `object` unchanged.
		func deserialize(_ object: Value?) -> Value? { object }

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			guard let value = stored as? Value else {
				return .failure("expected a \(Value.self), found \(BridgeDiagnosis.describe(stored))")
			}
			return .value(value)
		}
	}

	/// Stores a `Bool` as a property-list boolean; reads back booleans, and the integers 0 and 1 that some
	/// writers use for them.
	struct BoolBridge: Bridge, Sendable {
		/// Returns `value` unchanged.
		func serialize(_ value: Bool?) -> Any? { value }

		/// Returns the boolean that `object` stands for.
		func deserialize(_ object: Any?) -> Bool? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Bool> {
			switch stored {
			case let value as Bool: .value(value)
			case let value as Int where value == 0 || value == 1: .value(value == 1)
			default: .failure("expected a boolean, found \(BridgeDiagnosis.describe(stored))")
			}
		}
	}

	/// Stores an integer of any width as a property-list integer, and reads it back exactly.
	///
	/// A stored number that does not fit the type (300 for an `Int8`, 1.5 for an `Int`) does not decode; it is
	/// never truncated.
	struct IntegerBridge<Value: FixedWidthInteger & Sendable>: Bridge, Sendable {
		/// Returns `value` as an `Int`, or as a `UInt64` above `Int.max`.
		func serialize(_ value: Value?) -> Any? {
			guard let value else {
				return nil
			}
			if let int = Int(exactly: value) {
				return int
			}
			return UInt64(exactly: value)
		}

		/// Returns the stored number as a `Value`, if it is a whole number in the type's range.
		func deserialize(_ object: Any?) -> Value? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			let value: Value?
			switch stored {
			case let number as Int: value = Value(exactly: number)
			case let number as UInt64: value = Value(exactly: number)
			case let number as Double: value = Value(exactly: number)
			default: return .failure("expected an integer, found \(BridgeDiagnosis.describe(stored))")
			}
			guard let value else {
				return .failure(
					"\(stored) is not a whole number in the range of \(Value.self) (\(Value.min)…\(Value.max))")
			}
			return .value(value)
		}
	}

	/// Stores `Float`, `Double` and `CGFloat` as property-list reals (`Double`), and reads them back exactly.
	struct FloatingPointBridge<Value: BinaryFloatingPoint & Sendable>: Bridge, Sendable {
		/// Returns `value` widened to `Double`, which is exact for every `Float`.
		func serialize(_ value: Value?) -> Any? {
			value.map { Double($0) }
		}

		/// Returns the stored number as a `Value`; integers are accepted too.
		func deserialize(_ object: Any?) -> Value? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			let value: Value? =
				switch stored {
				case let number as Double: Value(number)
				case let number as Int: Value(exactly: number)
				case let number as UInt64: Value(exactly: number)
				default: nil
				}
			guard let value else {
				return .failure("expected a number, found \(BridgeDiagnosis.describe(stored))")
			}
			return .value(value)
		}
	}
}

/// Booleans are stored as property-list booleans.
extension Bool: Defaults.Serializable {
	/// The bridge: a property-list boolean (the integers 0 and 1 read as booleans too).
	public static let bridge = Defaults.AnyBridge(Defaults.BoolBridge())
}

/// Strings are stored as they are.
extension String: Defaults.Serializable {
	/// The bridge: the property-list type itself, by a cast.
	public static let bridge = Defaults.AnyBridge(Defaults.NativeBridge<String>())
}

/// Data is stored as it is.
extension Data: Defaults.Serializable {
	/// The bridge: the property-list type itself, by a cast.
	public static let bridge = Defaults.AnyBridge(Defaults.NativeBridge<Data>())
}

/// Dates are stored as property-list dates (exact to the sub-second in the file store).
extension Date: Defaults.Serializable {
	/// The bridge: the property-list type itself, by a cast.
	public static let bridge = Defaults.AnyBridge(Defaults.NativeBridge<Date>())
}

/// Stored as a property-list integer, and read back exactly.
extension Int: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<Int>())
}

/// Stored as a property-list integer; a stored integer out of range does not decode.
extension Int8: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<Int8>())
}

/// Stored as a property-list integer; a stored integer out of range does not decode.
extension Int16: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<Int16>())
}

/// Stored as a property-list integer; a stored integer out of range does not decode.
extension Int32: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<Int32>())
}

/// Stored as a property-list integer, read back exactly on Linux too.
extension Int64: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<Int64>())
}

/// Stored as a property-list integer; values above `Int.max` are stored as `UInt64`.
extension UInt: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<UInt>())
}

/// Stored as a property-list integer; a stored integer out of range does not decode.
extension UInt8: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<UInt8>())
}

/// Stored as a property-list integer; a stored integer out of range does not decode.
extension UInt16: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<UInt16>())
}

/// Stored as a property-list integer; a stored integer out of range does not decode.
extension UInt32: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<UInt32>())
}

/// Stored as a property-list integer, `UInt64.max` included.
extension UInt64: Defaults.Serializable {
	/// The bridge: a property-list integer, read back exactly (a stored number out of range does not decode).
	public static let bridge = Defaults.AnyBridge(Defaults.IntegerBridge<UInt64>())
}

/// Stored as a property-list real.
extension Double: Defaults.Serializable {
	/// The bridge: a property-list real (`Double`), read back exactly.
	public static let bridge = Defaults.AnyBridge(Defaults.FloatingPointBridge<Double>())
}

/// Stored as a property-list real, and read back as the same `Float`, also after a reload on Linux.
extension Float: Defaults.Serializable {
	/// The bridge: a property-list real (`Double`), read back exactly.
	public static let bridge = Defaults.AnyBridge(Defaults.FloatingPointBridge<Float>())
}

/// Stored as a property-list real (Foundation on Linux crashes storing a `CGFloat` itself).
extension CGFloat: Defaults.Serializable {
	/// The bridge: a property-list real (`Double`), read back exactly.
	public static let bridge = Defaults.AnyBridge(Defaults.FloatingPointBridge<CGFloat>())
}

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.IntegerBridge: DecodingBridge {}
extension Defaults.FloatingPointBridge: DecodingBridge {}
extension Defaults.BoolBridge: DecodingBridge {}
extension Defaults.NativeBridge: DecodingBridge {}

// MARK: Stored as they are (`isNativelySupportedType`)

extension Bool: StoredAsItIs {}
extension String: StoredAsItIs {}
extension Data: StoredAsItIs {}
extension Date: StoredAsItIs {}
extension Int: StoredAsItIs {}
extension Int8: StoredAsItIs {}
extension Int16: StoredAsItIs {}
extension Int32: StoredAsItIs {}
extension Int64: StoredAsItIs {}
extension UInt: StoredAsItIs {}
extension UInt8: StoredAsItIs {}
extension UInt16: StoredAsItIs {}
extension UInt32: StoredAsItIs {}
extension UInt64: StoredAsItIs {}
extension Double: StoredAsItIs {}
extension Float: StoredAsItIs {}
extension CGFloat: StoredAsItIs {}
