import Foundation

/// What decoding one stored value gave: the value, or a sentence that says why the stored value is not one.
///
/// A built-in bridge decodes a stored value once into this, so the reason a read failed comes from the walk that
/// failed rather than from a second walk that has to agree with the first. The sentence is built only on failure.
enum DecodeResult<Value> {
	case value(Value)
	case failure(String)

	/// The decoded value, or `nil` when decoding failed.
	var value: Value? {
		if case .value(let value) = self {
			return value
		}
		return nil
	}

	/// The value turned by `transform`, or the same failure.
	func map<Other>(_ transform: (Value) -> Other) -> DecodeResult<Other> {
		switch self {
		case .value(let value): .value(transform(value))
		case .failure(let reason): .failure(reason)
		}
	}

	/// Why decoding failed, or `nil` when it did not.
	var failureReason: String? {
		if case .failure(let reason) = self {
			return reason
		}
		return nil
	}
}

/// A bridge that decodes a stored value once into its value or the reason it is not one.
///
/// Every built-in bridge conforms in its own file, and its public `deserialize` is this decoding's value, so that each
/// bridge has one walk over a stored value and adding a bridge is one file; `BuiltInBridgeDiagnosisTests` fails for a
/// built-in bridge without it. A bridge that does not conform (a user's own) is decoded through its `deserialize` and
/// gets `StoredForm.decoded(_:through:castingStoredForm:)`'s generic sentence.
protocol DecodingBridge<Value>: Defaults.Bridge {
	associatedtype Value

	/// Decodes the normalised property-list value `stored`.
	func decode(storedForm stored: Any) -> DecodeResult<Value>
}

/// The sentences of decode and encode failures that more than one bridge uses.
enum BridgeDiagnosis {
	/// Why `bridge` returned no stored form for `value`: for an `Encodable` value the JSON encoder's error, else that
	/// the bridge returned nil.
	///
	/// A bridge's `serialize` returns an optional, so the encoder's error is gone by then; encoding again, only after
	/// a failure, recovers it.
	static func reason<Wrapped: Defaults.Bridge>(encoding value: Wrapped.Value?, through bridge: Wrapped) -> String {
		// Also through an optional's bridge: the value is then an `Optional`, which is `Encodable` when it wraps one.
		if let encodable = value.flatMap({ $0 as? any Encodable }) {
			do {
				_ = try JSONText.encode(encodable)
			} catch {
				return "its bridge \(Wrapped.self) could not encode the value: \(error)"
			}
		}
		return "its bridge \(Wrapped.self) returned nil"
	}

	/// The elements an array of stored forms stands for, or the reason the first failing element does not decode.
	static func decodeElements<Element: Defaults.Serializable>(
		of stored: Any, as type: Element.Type
	) -> DecodeResult<[Element]> {
		guard let forms = stored as? [Any] else {
			return .failure("expected an array, found \(describe(stored))")
		}
		if Element.isNativelySupportedType, let elements = forms as? [Element] {
			return .value(elements)
		}
		var elements = [Element]()
		elements.reserveCapacity(forms.count)
		for (index, form) in forms.enumerated() {
			switch Element.decoded(fromStoredForm: form) {
			case .value(let element): elements.append(element)
			case .failure(let reason): return .failure("element \(index): " + reason)
			}
		}
		return .value(elements)
	}

	/// `data` decoded as JSON of a `Value`, or why it is not, from the decoder's own error.
	static func decodeJSON<Value: Decodable>(_ data: Data, as type: Value.Type) -> DecodeResult<Value> {
		do {
			return .value(try JSONDecoder().decode(Value.self, from: data))
		} catch let DecodingError.keyNotFound(key, context) {
			return .failure("JSON for \(Value.self) misses the key '\(key.stringValue)'\(at(context.codingPath))")
		} catch let DecodingError.typeMismatch(expected, context) {
			return .failure(
				"JSON for \(Value.self) has no \(expected)\(at(context.codingPath)): \(context.debugDescription)")
		} catch let DecodingError.valueNotFound(expected, context) {
			return .failure("JSON for \(Value.self) has null where a \(expected) belongs\(at(context.codingPath))")
		} catch let DecodingError.dataCorrupted(context) {
			return .failure(
				"the text is not valid JSON for \(Value.self)\(at(context.codingPath)): \(context.debugDescription)")
		} catch {
			return .failure("JSON for \(Value.self) does not decode: \(error)")
		}
	}

	private static func at(_ path: [any CodingKey]) -> String {
		path.isEmpty ? "" : " at " + path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
	}

	/// The stored value's type and a prefix of its contents.
	static func describe(_ stored: Any) -> String {
		"a \(Swift.type(of: stored)) (\(Defaults.PropertyList.Printer(.swift, limit: 120).text(of: stored)))"
	}
}
