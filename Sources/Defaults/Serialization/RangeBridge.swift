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
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			guard let bounds = stored as? [Any], bounds.count == 2 else {
				return .failure("expected [lowerBound, upperBound], found \(BridgeDiagnosis.describe(stored))")
			}
			let lower: Value.Bound
			let upper: Value.Bound
			switch (Value.Bound.decoded(fromStoredForm: bounds[0]), Value.Bound.decoded(fromStoredForm: bounds[1])) {
			case (.value(let first), .value(let second)): (lower, upper) = (first, second)
			case (.failure(let reason), _), (_, .failure(let reason)): return .failure("bound: " + reason)
			}
			guard lower <= upper else {
				return .failure("the lower bound is above the upper bound")
			}
			return .value(Value(uncheckedBounds: (lower, upper)))
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

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.RangeBridge: DecodingBridge {}
