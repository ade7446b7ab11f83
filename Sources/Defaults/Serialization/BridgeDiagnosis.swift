import Foundation

/// A bridge that can say why a stored value does not decode. Only asked after a decode failed, so it costs the
/// read path nothing.
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

extension Defaults.TopLevelCodableBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		guard let text = stored as? String else {
			return "JSON text is stored as a String, and found \(BridgeDiagnosis.describe(stored))"
		}
		return BridgeDiagnosis.jsonFailure(decoding: Data(text.utf8), as: Value.self)
	}
}

extension JSONDataBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		guard let data = stored as? Data else {
			return "JSON data is stored as Data, and found \(BridgeDiagnosis.describe(stored))"
		}
		return BridgeDiagnosis.jsonFailure(decoding: data, as: Value.self)
	}
}

extension Defaults.IntegerBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		switch stored {
		case is Int, is UInt64, is Double:
			"\(stored) is not a whole number in the range of \(Value.self) (\(Value.min)…\(Value.max))"
		default: "expected an integer, found \(BridgeDiagnosis.describe(stored))"
		}
	}
}

extension Defaults.FloatingPointBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		"expected a number, found \(BridgeDiagnosis.describe(stored))"
	}
}

extension Defaults.BoolBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		"expected a boolean, found \(BridgeDiagnosis.describe(stored))"
	}
}

extension Defaults.NativeBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		"expected a \(Value.self), found \(BridgeDiagnosis.describe(stored))"
	}
}

extension Defaults.UUIDBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		"expected a UUID string such as E621E1F8-C36C-495A-93FC-0C247A3E6E5F, found \(BridgeDiagnosis.describe(stored))"
	}
}

extension Defaults.RawRepresentableBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		guard let raw = Value.RawValue.value(fromStoredForm: stored) else {
			return "the raw value: " + BridgeDiagnosis.reason(decoding: stored, as: Value.RawValue.self)
		}
		return "\(Value.self) has no value with the raw value \(raw)"
	}
}

extension Defaults.NSSecureCodingBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		guard let data = stored as? Data else {
			return "a keyed archive is stored as Data, and found \(BridgeDiagnosis.describe(stored))"
		}
		guard let className = KeyedArchive.rootClassName(of: data) else {
			return "the data is not a keyed archive"
		}
		let expected = NSStringFromClass(Value.self)
		if className != expected {
			return "the archive holds a \(className), not a \(expected)"
		}
		return "the \(className) archive did not unarchive with secure coding"
	}
}

extension Defaults.ArrayBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		BridgeDiagnosis.reason(decodingElements: stored, as: Element.self)
	}
}

extension Defaults.SetBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		BridgeDiagnosis.reason(decodingElements: stored, as: Element.self)
	}
}

extension Defaults.CollectionBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		BridgeDiagnosis.reason(decodingElements: stored, as: Value.Element.self)
	}
}

extension Defaults.SetAlgebraBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		BridgeDiagnosis.reason(decodingElements: stored, as: Value.Element.self)
	}
}

extension Defaults.DictionaryBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		guard let dictionary = stored as? [String: Any] else {
			return "expected a dictionary, found \(BridgeDiagnosis.describe(stored))"
		}
		for (name, element) in dictionary.sorted(by: { $0.key < $1.key }) {
			if Key(name) == nil {
				return "the key '\(name)' is not a \(Key.self)"
			}
			if Element.value(fromStoredForm: element) == nil {
				return "value for '\(name)': " + BridgeDiagnosis.reason(decoding: element, as: Element.self)
			}
		}
		return "every entry decodes"
	}
}

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

extension Defaults.OptionalBridge: DiagnosingBridge {
	func reasonForFailure(decoding stored: Any) -> String {
		BridgeDiagnosis.reason(decoding: stored, as: Wrapped.self)
	}
}
