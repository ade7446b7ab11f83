import Benchmark
import Defaults
import Foundation

/// An `Int` key of an in-memory store with `observers` callbacks attached, each reading the new value.
public final class ObservedKey: @unchecked Sendable {
	public let key: Defaults.Key<Int>
	/// The last value written, for benchmarks that write a new one each time.
	public var lastValue = 0
	private let observations: [any Defaults.Observation]

	public init(observers: Int) {
		let key = Defaults.Key<Int>("observed", default: 0, suite: Defaults.InMemoryStore())
		self.key = key
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

/// A `Codable` struct key of an in-memory store with `observers` callbacks attached, each reading the new value:
/// the observers share one decoding of each change (`StoredChange`'s memo), where an `Int` key's are casts.
public final class ObservedStructKey: @unchecked Sendable {
	public let key: Defaults.Key<Profile>
	/// The last value written, for benchmarks that write a new one each time.
	public var lastValue = Profile(name: "Ada", age: 36, email: "ada@example.com", isAdmin: false, score: 1.5)
	private let observations: [any Defaults.Observation]

	public init(observers: Int) {
		let key = Defaults.Key<Profile>(
			"observedProfile", default: Profile(name: "", age: 0, email: "", isAdmin: false, score: 0),
			suite: Defaults.InMemoryStore())
		self.key = key
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
