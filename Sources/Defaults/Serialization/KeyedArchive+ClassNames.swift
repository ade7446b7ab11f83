import Foundation
import Synchronization

// Which classes Foundation can archive at all.
extension KeyedArchive {
	private static let reported = LockedState<Set<ObjectIdentifier>>([])

	/// Whether Foundation can name `type` in an archive. On Linux it names a class by `Module.Class` and stops the
	/// process (`NSStringFromClass: … is not a top-level class`) for a class that is nested, `private` or local; such a
	/// type is refused here instead, and the refusal is reported once to ``Defaults/failureHandler``.
	static func canArchive(_ type: AnyClass) -> Bool {
		#if canImport(ObjectiveC)
			return true
		#else
			// `Module.(unknown context at $…).Class` for a private class, `Module.Outer.Class` for a nested one.
			if String(reflecting: type).split(separator: ".").count == 2 {
				return true
			}
			let isFirst = reported.withLock { $0.insert(ObjectIdentifier(type)).inserted }
			if isFirst {
				Defaults.report(Defaults.Failure(keyName: "", reason: .unsupported, message: notTopLevelMessage(type)))
			}
			return false
		#endif
	}

	static func notTopLevelMessage(_ type: AnyClass) -> String {
		"\(String(reflecting: type)) cannot be stored as a keyed archive: Foundation on Linux archives only top-level, "
			+ "non-private classes (it would stop the process). Declare the class at file scope, internal or public; "
			+ "values of this key are not stored."
	}
}
