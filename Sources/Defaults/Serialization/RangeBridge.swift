import Foundation

extension Defaults {
	/// A range type that ``Defaults/RangeBridge`` can store: `Range` and `ClosedRange`.
	public protocol RangeSerializable<Bound> {
		/// The type of the bounds.
		associatedtype Bound: Comparable
		/// The lower bound.
		var lowerBound: Bound { get }
		/// The upper bound.
		var upperBound: Bound { get }
		/// Creates the range from bounds that are already known to be ordered.
		init(uncheckedBounds bounds: (lower: Bound, upper: Bound))
	}

	/// Stores a `Range` or `ClosedRange` as `[lowerBound, upperBound]`, each bound in its own stored form.
	///
	/// A stored pair whose lower bound is above its upper bound does not decode.
	public struct RangeBridge<Value: RangeSerializable>: Bridge, Sendable where Value.Bound: Defaults.Serializable {
		/// The two bounds' stored forms.
		public typealias Serializable = [Any]

		/// Creates the bridge.
		public init() {}

		/// Returns `[lowerBound, upperBound]` in stored form.
		public func serialize(_ value: Value?) -> [Any]? {
			guard
				let value,
				let lower = try? Value.Bound.storedForm(of: value.lowerBound),
				let upper = try? Value.Bound.storedForm(of: value.upperBound)
			else {
				return nil
			}
			return [lower, upper]
		}

		/// Returns the range, or `nil` unless `object` holds two ordered bounds.
		public func deserialize(_ object: [Any]?) -> Value? {
			guard
				let object, object.count == 2,
				let lower = Value.Bound.value(fromStoredForm: object[0]),
				let upper = Value.Bound.value(fromStoredForm: object[1]),
				lower <= upper
			else {
				return nil
			}
			return Value(uncheckedBounds: (lower, upper))
		}
	}
}

/// A half-open range is a range ``Defaults/RangeBridge`` can store.
extension Range: Defaults.RangeSerializable {}
/// A closed range is a range ``Defaults/RangeBridge`` can store.
extension ClosedRange: Defaults.RangeSerializable {}

/// A range of serializable bounds is stored as `[lowerBound, upperBound]`.
extension Range: Defaults.Serializable where Bound: Defaults.Serializable {
	/// ``Defaults/RangeBridge``.
	public static var bridge: Defaults.RangeBridge<Range> { .init() }
}

/// A closed range of serializable bounds is stored as `[lowerBound, upperBound]`.
extension ClosedRange: Defaults.Serializable where Bound: Defaults.Serializable {
	/// ``Defaults/RangeBridge``.
	public static var bridge: Defaults.RangeBridge<ClosedRange> { .init() }
}

// MARK: Why a stored value does not decode

extension Defaults.RangeBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		guard let bounds = stored as? [Any], bounds.count == 2 else {
			return "expected [lowerBound, upperBound], found \(BridgeDiagnosis.describe(stored))"
		}
		for bound in bounds where Value.Bound.value(fromStoredForm: bound) == nil {
			return "bound: " + BridgeDiagnosis.reason(decoding: bound, as: Value.Bound.self)
		}
		return "the lower bound is above the upper bound"
	}
}
