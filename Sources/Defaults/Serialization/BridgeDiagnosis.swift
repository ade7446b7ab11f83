import Foundation

/// A bridge that can say why a stored value does not decode. Only asked after a decode failed, so it costs the
/// read path nothing.
///
/// Every built-in bridge conforms in its own file, beside its `serialize` and `deserialize` (under "Why a stored value
/// does not decode"), so that adding a bridge is one file; `BuiltInBridgeDiagnosisTests` fails for a built-in bridge
/// without it. A bridge that does not conform (a user's own) gets `BridgeDiagnosis`'s generic sentence.
protocol DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String
}

/// Turns a failed decode into a sentence that says what was expected and what was found.
enum BridgeDiagnosis {
	static func reason<Value: Defaults.Serializable>(decoding stored: Any, as type: Value.Type) -> String {
		reason(decoding: stored, through: Value.bridge)
	}

	/// Why `bridge` refuses `stored`: its own account if it gives one, else what it expects and what was found.
	static func reason<Wrapped: Defaults.Bridge>(decoding stored: Any, through bridge: Wrapped) -> String {
		if let diagnosing = bridge as? any DiagnosingBridge {
			return diagnosing.reasonForFailure(decoding: stored)
		}
		if Wrapped.Serializable.self != Any.self, StoredForm.decode(stored, as: Wrapped.Serializable.self) == nil {
			return "\(Wrapped.self) expects a \(Wrapped.Serializable.self), and found \(describe(stored))"
		}
		return "\(Wrapped.self) did not accept \(describe(stored))"
	}

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

	/// The reason the element at the first failing position does not decode.
	static func reason<Element: Defaults.Serializable>(decodingElements stored: Any, as type: Element.Type) -> String {
		guard let array = stored as? [Any] else {
			return "expected an array, found \(describe(stored))"
		}
		for (index, element) in array.enumerated() where Element.value(fromStoredForm: element) == nil {
			return "element \(index): " + reason(decoding: element, as: Element.self)
		}
		return "every element decodes"
	}

	/// Why `data` is not JSON of a `Value`, from the decoder's own error.
	static func jsonFailure<Value: Decodable>(decoding data: Data, as type: Value.Type) -> String {
		do {
			_ = try JSONDecoder().decode(Value.self, from: data)
			return "it decodes"
		} catch let DecodingError.keyNotFound(key, context) {
			return "JSON for \(Value.self) misses the key '\(key.stringValue)'\(at(context.codingPath))"
		} catch let DecodingError.typeMismatch(expected, context) {
			return "JSON for \(Value.self) has no \(expected)\(at(context.codingPath)): \(context.debugDescription)"
		} catch let DecodingError.valueNotFound(expected, context) {
			return "JSON for \(Value.self) has null where a \(expected) belongs\(at(context.codingPath))"
		} catch let DecodingError.dataCorrupted(context) {
			return "the text is not valid JSON for \(Value.self)\(at(context.codingPath)): \(context.debugDescription)"
		} catch {
			return "JSON for \(Value.self) does not decode: \(error)"
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
