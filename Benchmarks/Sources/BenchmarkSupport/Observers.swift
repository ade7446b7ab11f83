import Benchmark
import Defaults
import Foundation

/// A key of an in-memory store with `observers` callbacks attached, each reading the new value.
///
/// An `Int` key's observers read the change by a cast; a `Codable` struct key's share one decoding of each change
/// (`StoredChange`'s memo).
public final class ObservedKey<Value: Defaults.Serializable>: @unchecked Sendable {
	public let key: Defaults.Key<Value>
	/// The last value written, for benchmarks that write a new one each time.
	public var lastValue: Value
	private let observations: [any Defaults.Observation]

	public init(_ name: String, default defaultValue: Value, observers: Int) {
		let key = Defaults.Key<Value>(name, default: defaultValue, suite: Defaults.InMemoryStore())
		self.key = key
		self.lastValue = defaultValue
		self.observations = (0..<observers).map { _ in
			Defaults.observe(key, options: []) { change in
				blackHole(change.newValue)
			}
		}
	}

	deinit {
		observations.forEach { $0.invalidate() }
	}
}

extension ObservedKey where Value == Int {
	public convenience init(observers: Int) {
		self.init("observed", default: 0, observers: observers)
	}
}

extension ObservedKey where Value == Profile {
	public convenience init(observers: Int) {
		self.init(
			"observedProfile",
			default: Profile(name: "Ada", age: 36, email: "ada@example.com", isAdmin: false, score: 1.5),
			observers: observers)
	}
}

/// Foundation's nearest tool on Linux, where `UserDefaults` posts nothing per key: a notification center with
/// `observers` blocks attached, each reading the notification.
public final class ObservedNotification: @unchecked Sendable {
	private let center = NotificationCenter()
	private let name = Notification.Name("observed")
	private var tokens: [any NSObjectProtocol] = []

	public init(observers: Int) {
		tokens = (0..<observers).map { _ in
			center.addObserver(forName: name, object: nil, queue: nil) { notification in
				blackHole(notification.name)
			}
		}
	}

	/// Posts the notification once; every observer runs before it returns.
	public func post() {
		center.post(name: name, object: nil)
	}

	deinit {
		tokens.forEach(center.removeObserver)
	}
}
