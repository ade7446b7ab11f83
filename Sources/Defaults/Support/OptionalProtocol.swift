/// Lets generic code see through `Optional` without knowing its wrapped type.
protocol OptionalProtocol {
	var wrappedAny: Any? { get }
	static var wrappedType: Any.Type { get }
}

extension Optional: OptionalProtocol {
	var wrappedAny: Any? {
		switch self {
		case .some(let wrapped): wrapped
		case .none: nil
		}
	}

	static var wrappedType: Any.Type { Wrapped.self }
}
