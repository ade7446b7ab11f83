import Foundation

extension Defaults {
	/// The values of one or more keys over time: the current value first, then one element per change.
	///
	/// Returned by ``Defaults/updates(_:initial:)->Defaults.Updates<Value>``. Each `for await` loop has an observation of its own, which
	/// starts when the loop starts and ends when the loop ends: when it breaks, returns or throws, or when its task is
	/// cancelled. Nothing is observed before iteration begins.
	///
	/// ```swift
	/// for await isUnicornMode in Defaults.updates(.isUnicornMode) {
	/// 	print(isUnicornMode)
	/// }
	/// ```
	///
	/// Every change is delivered, in order, also when the loop is slower than the writes; elements are buffered until
	/// the loop takes them.
	public struct Updates<Element>: AsyncSequence, @unchecked Sendable {
		/// Starts an observation that feeds `continuation`, and returns it.
		///
		/// It captures only keys, which are `Sendable`, and their value types; it is not declared `@Sendable` because
		/// a generic value type's metatype is not known to be `Sendable`, which is what makes the conformance
		/// unchecked.
		private let start: (AsyncStream<Element>.Continuation) -> ChangeSubscription

		init(start: @escaping (AsyncStream<Element>.Continuation) -> ChangeSubscription) {
			self.start = start
		}

		/// Starts observing and returns an iterator over the values: `AsyncStream`'s own, whose end (a loop that
		/// breaks drops it, a cancelled task finishes it) ends the stream and so, through `onTermination`, the
		/// observation.
		public func makeAsyncIterator() -> AsyncStream<Element>.Iterator {
			let (stream, continuation) = AsyncStream<Element>.makeStream()
			let subscription = start(continuation)
			continuation.onTermination = { _ in
				subscription.cancel()
			}
			return stream.makeAsyncIterator()
		}
	}

	/// The value of `key` now and after each change, as an asynchronous sequence.
	///
	/// ```swift
	/// for await isUnicornMode in Defaults.updates(.isUnicornMode) {
	/// 	print("Unicorn mode:", isUnicornMode)
	/// }
	/// ```
	///
	/// Every write through the package is reported, and so are changes a store detects from outside (another process
	/// rewriting its file). The loop's observation ends when the loop does or its task is cancelled.
	///
	/// - Parameters:
	///   - key: The key to observe.
	///   - initial: Whether the first element is the current value (the default) or the first change.
	public static func updates<Value: Serializable>(_ key: Key<Value>, initial: Bool = true) -> Updates<Value> {
		Updates { continuation in
			let feed = Feed(continuation)
			let subscription = ChangeHub.shared.subscribe(to: [key], wantsPrior: false) { change in
				guard !change.isPrior else {
					return
				}
				feed.yield { change.decoded(for: key) { key.newValue(decoding: change) } }
			}
			if initial {
				feed.yield { key.suite[key] }
			}
			return subscription
		}
	}

	/// The values of several keys now and after each change of any of them, as tuples.
	///
	/// ```swift
	/// for await (width, height) in Defaults.updates(.width, .height) {
	/// 	print("size:", width, height)
	/// }
	/// ```
	///
	/// Each element holds the current value of every key. See ``updates(_:initial:)`` for what is reported.
	public static func updates<each Value: Serializable>(
		_ keys: repeat Key<each Value>, initial: Bool = true
	) -> Updates<(repeat each Value)> {
		Updates { continuation in
			let feed = Feed(continuation)
			var targets: [Keys] = []
			for key in repeat each keys {
				targets.append(key)
			}
			let subscription = ChangeHub.shared.subscribe(to: targets, wantsPrior: false) { change in
				guard !change.isPrior else {
					return
				}
				feed.yield { (repeat (each keys).suite[each keys]) }
			}
			if initial {
				feed.yield { (repeat (each keys).suite[each keys]) }
			}
			return subscription
		}
	}

	/// An event each time any of `keys` changes, for keys of different types.
	///
	/// ```swift
	/// for await _ in Defaults.updates([.width, .title]) {
	/// 	redraw()
	/// }
	/// ```
	///
	/// - Parameters:
	///   - keys: The keys to observe; they may live in different stores.
	///   - initial: Whether to deliver one event right away (the default).
	public static func updates(_ keys: [Keys], initial: Bool = true) -> Updates<Void> {
		Updates { continuation in
			let feed = Feed(continuation)
			let subscription = ChangeHub.shared.subscribe(to: keys, wantsPrior: false) { change in
				guard !change.isPrior else {
					return
				}
				feed.yield {}
			}
			if initial {
				feed.yield {}
			}
			return subscription
		}
	}
}

/// Yields into an `AsyncStream` so that values arrive in the order they were read: the initial read and the change
/// handlers of other threads take turns, so a stale initial value can never follow a newer one.
private final class Feed<Element>: @unchecked Sendable {
	private let continuation: AsyncStream<Element>.Continuation
	private let turn = LockedState(())

	init(_ continuation: AsyncStream<Element>.Continuation) {
		self.continuation = continuation
	}

	func yield(_ value: () -> Element) {
		turn.withLock { _ in
			_ = continuation.yield(value())
		}
	}
}
