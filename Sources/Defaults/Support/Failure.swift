import Foundation
import Synchronization

extension Defaults {
	/// Something that went wrong without a thrown error: a stored value that did not decode, a value that could not
	/// be stored, a key name that breaks the rules.
	///
	/// Failures never destroy data: a value that does not decode is left in its store exactly as it was, and the key
	/// reads as its default. Each failure is handed to ``Defaults/failureHandler``.
	public struct Failure: Sendable, CustomStringConvertible {
		/// What kind of failure this is.
		public enum Reason: Sendable, Equatable {
			/// A stored value did not decode to the key's type.
			case decodingFailed
			/// A value could not be turned into a property-list value, so nothing was written.
			case encodingFailed
			/// A key name breaks the naming rules.
			case invalidKeyName
			/// A store could not read or write its backing data.
			case storage
			/// A migration step left a value as it was rather than guess (see ``Defaults/migrate(_:store:versionKey:)``).
			case migration
			/// Something this package does not have was asked for, such as a feature of Apple's platforms with no Linux
			/// counterpart.
			case unsupported
		}

		/// The name of the key involved.
		public let keyName: String
		/// What kind of failure this is.
		public let reason: Reason
		/// A sentence that says what happened and why; ``description`` is the same with the package's name first.
		package let message: String
		/// For a ``Reason/decodingFailed`` failure: what was stored, which bridges tried it, and why they refused it.
		public let decodingError: DecodingError?

		/// Creates a failure.
		package init(keyName: String, reason: Reason, message: String, decodingError: DecodingError? = nil) {
			self.keyName = keyName
			self.reason = reason
			self.message = message
			self.decodingError = decodingError
		}

		/// A sentence that says what happened and why, prefixed with the package name.
		public var description: String { "Defaults: \(message)" }
	}

	private static let failureHandlerStorage = LockedState<@Sendable (Failure) -> Void>(Defaults.printToStandardError)

	/// Called with every ``Defaults/Failure``; by default it prints the failure to standard error, and drops it when
	/// standard error cannot take it (closed, or on a full disk) rather than stop the app.
	///
	/// Replace it to route failures to your logger:
	///
	/// ```swift
	/// Defaults.failureHandler = { failure in logger.warning("\(failure)") }
	/// ```
	///
	/// It is called on the thread that met the failure, before that thread goes on. A sync engine calls it without
	/// the settings file's lock or the store's (a failure met in a step under them is reported once the step has
	/// released them): the handler may read, write and flush the store, configure sync again, and stop engines (see
	/// ``SyncEngine/stop()``).
	public static var failureHandler: @Sendable (Failure) -> Void {
		get { failureHandlerStorage.withLock { $0 } }
		set { failureHandlerStorage.withLock { $0 = newValue } }
	}

	/// Hands `failure` to ``failureHandler``.
	static func report(_ failure: Failure) {
		failureHandler(failure)
	}

	@Sendable private static func printToStandardError(_ failure: Failure) {
		// Never `FileHandle.write(_:)`, which traps when standard error is closed or its disk is full.
		writeToStandardError("\(failure)\n")
	}
}
