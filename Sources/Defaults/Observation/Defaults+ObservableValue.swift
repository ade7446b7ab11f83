import Foundation
import Observation

extension Defaults {
	/// The value of a key for Swift's Observation framework: `withObservationTracking`, and SwiftUI where there is
	/// one, see a change of the key made anywhere, through this object, through any other code, or by another
	/// process.
	///
	/// Expose a key from an `@Observable` model with a computed property that goes through it:
	///
	/// ```swift
	/// import Observation
	///
	/// @Observable
	/// final class Settings {
	/// 	private let storedLevel = Defaults.ObservableValue(.level)
	///
	/// 	var level: Int {
	/// 		get { storedLevel.value }
	/// 		set { storedLevel.value = newValue }
	/// 	}
	/// }
	///
	/// withObservationTracking {
	/// 	_ = settings.level
	/// } onChange: {
	/// 	print("level changed")
	/// }
	/// ```
	///
	/// Observers are told after the change is written, so reading the key in `onChange` gives the new value. The
	/// object observes its key for as long as it lives.
	public final class ObservableValue<Value: Serializable>: Observable, Sendable {
		/// The key whose value this is.
		package let key: Key<Value>

		private let registrar = ObservationRegistrar()
		private let subscription = LockedState<ChangeSubscription?>(nil)

		/// Creates an observable value for `key`.
		public init(_ key: Key<Value>) {
			self.key = key
			let subscription = ChangeHub.shared.subscribe(to: [key], wantsPrior: false) {
				[weak self] change in
				guard !change.isPrior, let self else {
					return
				}
				registrar.withMutation(of: self, keyPath: \.value) {}
			}
			self.subscription.withLock { $0 = subscription }
		}

		deinit {
			subscription.withLock { $0 }?.cancel()
		}

		/// The key's current value; reading it inside `withObservationTracking` tracks the key, and setting it writes
		/// the key's store.
		public var value: Value {
			get {
				registrar.access(self, keyPath: \.value)
				return Defaults[key]
			}
			set {
				// The hub reports the write, to this object as to every other observer of the key.
				Defaults[key] = newValue
			}
		}
	}
}
