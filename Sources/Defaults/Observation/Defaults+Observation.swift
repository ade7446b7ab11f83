import Foundation

extension Defaults {
	/// A running observation, returned by ``Defaults/observe(_:options:handler:)``.
	///
	/// The observation lasts until ``invalidate()`` is called or the object is released, whichever comes first; keep
	/// it in a property for as long as you want to hear changes, or tie it to the lifetime of another object.
	///
	/// ```swift
	/// final class LevelLabel {
	/// 	var text = ""
	/// 	private var observation: (any Defaults.Observation)?
	///
	/// 	init() {
	/// 		observation = Defaults.observe(.level) { [weak self] change in self?.text = "\(change.newValue)" }
	/// 	}
	/// }
	/// ```
	public protocol Observation: AnyObject {
		/// Ends the observation: the handler is not called again and is released. Safe to call more than once.
		func invalidate()

		/// Keeps the observation running until `weaklyHeldObject` is gone, so that you need not keep it yourself.
		///
		/// ```swift
		/// Defaults.observe(.level) { change in … }.tieToLifetime(of: self)
		/// ```
		///
		/// The object is held weakly. Without the Objective-C runtime there is no way to hear an object's end, so the
		/// observation notices it when the next change arrives: from then on the handler is never called, and the
		/// observation is released at that point.
		@discardableResult
		func tieToLifetime(of weaklyHeldObject: AnyObject) -> Self

		/// Undoes ``tieToLifetime(of:)``: the observation lasts as long as you keep it again.
		func removeLifetimeTie()
	}

	/// Calls `handler` each time the value of `key` changes, with the old and the new value.
	///
	/// ```swift
	/// let observation = Defaults.observe(.level) { change in
	/// 	print(change.oldValue, "->", change.newValue)
	/// }
	/// // later
	/// observation.invalidate()
	/// ```
	///
	/// Every write through the package is reported, whether it changes the value or not: the subscripts, resets,
	/// ``Defaults/removeAll(suite:)`` and ``Defaults/Store/write(_:forKey:)``; only a write that a layer above the
	/// user's values shadows (a lock, or a launch argument or environment variable the key reads) changes nothing a
	/// read sees and is not (see <doc:Layers>). So are changes that a store detects from outside, such as another
	/// process rewriting its file. `handler` runs synchronously on the thread that made the
	/// change, before the write returns (for outside changes: on the store's watcher thread).
	///
	/// - Parameters:
	///   - key: The key to observe.
	///   - options: `.initial` (the default) calls `handler` once right away with the current value; `.prior` calls it
	///     also before each change.
	///   - handler: Called with each change.
	/// - Returns: The observation; it ends when you call ``Observation/invalidate()`` or release it.
	@inlinable
	public static func observe<Value: Serializable>(
		_ key: Key<Value>, options: ObservationOptions = [.initial],
		handler: @escaping (KeyChange<Value>) -> Void
	) -> Observation {
		// Inlinable so that the closure below, which runs once per observer per change, is specialised for `Value`.
		let initial: (() -> Void)? =
			options.contains(.initial)
			? {
				let value = key.suite[key]
				handler(KeyChange(oldValue: value, newValue: value))
			} : nil
		return ChangeHub.shared.observe(key, wantsPrior: options.contains(.prior), initial: initial) { change in
			handler(KeyChange(change, of: key))
		}
	}

	/// Calls `handler` each time the value of any of `keys` changes.
	///
	/// ```swift
	/// let observation = Defaults.observe(keys: .width, .height) {
	/// 	print("resize to", Defaults[.width], Defaults[.height])
	/// }
	/// ```
	///
	/// Keys may live in different stores. See ``observe(_:options:handler:)`` for which changes are reported and
	/// where `handler` runs; with `.initial` it is called once right away, not once per key.
	public static func observe(
		keys: Keys..., options: ObservationOptions = [.initial], handler: @escaping () -> Void
	) -> Observation {
		observe(keys: keys, options: options, handler: handler)
	}

	/// Calls `handler` each time the value of any of `keys` changes; see the variadic `observe(keys:options:handler:)`.
	package static func observe(
		keys: [Keys], options: ObservationOptions = [.initial], handler: @escaping () -> Void
	) -> Observation {
		let subscription = ChangeHub.shared.subscribe(to: keys, wantsPrior: options.contains(.prior)) { _ in
			handler()
		}
		if options.contains(.initial) {
			subscription.deliverInitial(handler)
		}
		return KeyObservation(subscription)
	}
}

extension ChangeHub {
	/// Subscribes `handler` to `key`, runs `initial` (the initial notification, if any) unless the subscription has
	/// already ended, and returns the observation: what `observe` does beside its inlined closures.
	@usableFromInline
	func observe(
		_ key: Defaults.Keys, wantsPrior: Bool, initial: (() -> Void)?, handler: @escaping (StoredChange) -> Void
	) -> any Defaults.Observation {
		let subscription = subscribe(to: [key], wantsPrior: wantsPrior, handler: handler)
		if let initial {
			subscription.deliverInitial(initial)
		}
		return KeyObservation(subscription)
	}
}

/// The observation `observe` returns: owns a hub subscription and ends it when invalidated or released.
final class KeyObservation: Defaults.Observation, Sendable {
	private let subscription: ChangeSubscription

	init(_ subscription: ChangeSubscription) {
		self.subscription = subscription
	}

	deinit {
		subscription.cancel()
	}

	func invalidate() {
		subscription.cancel()
	}

	@discardableResult
	func tieToLifetime(of weaklyHeldObject: AnyObject) -> Self {
		subscription.tie(owner: self, to: weaklyHeldObject)
		return self
	}

	func removeLifetimeTie() {
		subscription.removeTie()
	}
}

extension ChangeSubscription {
	/// Runs `body`, the initial notification, unless the subscription has already ended.
	func deliverInitial(_ body: () -> Void) {
		guard !isCancelled else {
			return
		}
		body()
	}
}
