import Defaults
import Dispatch
import Foundation
import Synchronization

/// Checks that a ``/Defaults/Defaults/Store`` keeps the contract of the store seam, for any store: the package's own and yours.
///
/// It is independent of any test framework: call it from XCTest or Swift Testing and let the thrown error fail the
/// test. Every check runs on a fresh store from `makeStore`, and every violation found is reported, not only the
/// first.
///
/// ```swift
/// import DefaultsStoreConformance
///
/// @Test func myStoreKeepsTheContract() throws {
/// 	try StoreConformance.check { MyStore() }
/// }
/// ```
///
/// For a store that can change from outside this process's writes (a file another process rewrites, a database
/// with other clients), pass `outsideChange`: it changes a value behind the store's back the way that happens in
/// real life, and the kit checks that the store reports it with `reportOutsideChanges(_:)` and that the store and its
/// keys then read it.
public enum StoreConformance {
	/// One way in which a store breaks the contract.
	public struct Violation: Sendable, CustomStringConvertible {
		/// The check that found it, such as `"round trip"`.
		public let check: String
		/// What was expected and what happened.
		public let message: String

		/// The check and the message, as one line.
		public var description: String { "\(check): \(message)" }
	}

	/// The error ``check(outsideChange:makeStore:)`` throws: every violation it found.
	public struct Failure: Error, Sendable, CustomStringConvertible {
		/// What the store got wrong, in the order the checks ran.
		public let violations: [Violation]

		/// One line per violation.
		public var description: String {
			"The store breaks the store contract:\n" + violations.map { "- \($0)" }.joined(separator: "\n")
		}
	}

	/// Changes the value of a key in a store from outside this process's writes; see
	/// ``check(outsideChange:makeStore:)``.
	public typealias OutsideChange = @Sendable (_ store: any Defaults.Store, _ key: String, _ value: Int) throws -> Void

	/// Runs every check on stores made by `makeStore`.
	///
	/// - Parameters:
	///   - outsideChange: For a store that can change from outside, how to make such a change; `nil` skips that
	///     check.
	///   - makeStore: Makes a new, empty store for each check.
	/// - Throws: ``Failure`` listing every violation.
	public static func check(
		outsideChange: OutsideChange? = nil, makeStore: () throws -> any Defaults.Store
	) throws {
		var violations: [Violation] = []
		let checks: [(String, (any Defaults.Store, inout [String]) throws -> Void)] = [
			("round trip", checkRoundTrip), ("removal", checkRemoval), ("registration", checkRegistration),
			("threads", checkThreads), ("flush", checkFlush),
		]
		for (name, run) in checks {
			var messages: [String] = []
			do {
				try run(try makeStore(), &messages)
			} catch {
				messages.append("threw \(error)")
			}
			violations += messages.map { Violation(check: name, message: $0) }
		}
		if let outsideChange {
			var messages: [String] = []
			do {
				try checkOutsideChange(try makeStore(), outsideChange, &messages)
			} catch {
				messages.append("threw \(error)")
			}
			violations += messages.map { Violation(check: "outside changes", message: $0) }
		}
		if !violations.isEmpty {
			throw Failure(violations: violations)
		}
	}

	/// Every shape a normalised property-list value takes.
	static var samples: [(key: String, value: Any)] {
		[
			("bool", true), ("false", false), ("int", 42), ("negative", -7), ("min", Int.min), ("max", Int.max),
			("uint64", UInt64.max), ("double", 1.5), ("negativeZero", -0.0), ("string", "Grüße 👋"), ("empty", ""),
			("data", Data([0, 1, 255])), ("date", Date(timeIntervalSinceReferenceDate: 700_000_000.25)),
			("array", [1, "two", [3.0, false]] as [Any]),
			("dictionary", ["a": ["b": 1], "c": [Data()]] as [String: Any]),
			("emptyArray", [Any]()), ("emptyDictionary", [String: Any]()),
		]
	}

	private static func checkRoundTrip(_ store: any Defaults.Store, _ messages: inout [String]) throws {
		for (key, value) in samples {
			try store.write(value, forKey: key)
			guard let read = store.storedValue(forKey: key) else {
				messages.append("\(key): nothing read back after writing \(value)")
				continue
			}
			if !Defaults.PropertyList.isEqual(read, value) {
				messages.append("\(key): wrote \(value) (\(type(of: value))), read \(read) (\(type(of: read)))")
			}
		}
		let keys = Set(store.storedKeys())
		for (key, _) in samples where !keys.contains(key) {
			messages.append("storedKeys() lacks \(key)")
		}
	}

	private static func checkRemoval(_ store: any Defaults.Store, _ messages: inout [String]) throws {
		try store.write(1, forKey: "removed")
		store.removeValue(forKey: "removed")
		if let value = store.storedValue(forKey: "removed") {
			messages.append("a removed key still reads \(value)")
		}
		if store.storedKeys().contains("removed") {
			messages.append("storedKeys() lists a removed key")
		}
		store.removeValue(forKey: "neverStored")
		if store.storedValue(forKey: "neverStored") != nil {
			messages.append("removing a key that was never stored made it read a value")
		}
	}

	private static func checkRegistration(_ store: any Defaults.Store, _ messages: inout [String]) throws {
		store.registerDefaultValues(["layered": 1, "registeredOnly": "r"])
		if store.storedValue(forKey: "layered") as? Int != 1 {
			messages.append("a registered default does not read when nothing is stored")
		}
		try store.write(2, forKey: "layered")
		if store.storedValue(forKey: "layered") as? Int != 2 {
			messages.append("a stored value does not read over the registered default")
		}
		store.removeValue(forKey: "layered")
		if store.storedValue(forKey: "layered") as? Int != 1 {
			messages.append("after a removal the registered default does not show through again")
		}
		if store.storedKeys().contains("registeredOnly") {
			messages.append("storedKeys() lists a key that is only registered")
		}
	}

	private static func checkThreads(_ store: any Defaults.Store, _ messages: inout [String]) throws {
		let shared = UncheckedStore(store)
		let threads = 4
		let rounds = 300
		DispatchQueue.concurrentPerform(iterations: threads) { thread in
			for round in 0..<rounds {
				try? shared.store.write(round, forKey: "thread-\(thread)")
				_ = shared.store.storedValue(forKey: "thread-\((thread + 1) % threads)")
				_ = shared.store.storedKeys()
				if round % 3 == 0 {
					shared.store.removeValue(forKey: "scratch-\(thread)")
				} else {
					try? shared.store.write([round], forKey: "scratch-\(thread)")
				}
			}
		}
		for thread in 0..<threads {
			let value = store.storedValue(forKey: "thread-\(thread)")
			if value as? Int != rounds - 1 {
				messages.append(
					"after concurrent writes, thread-\(thread) reads \(value ?? "nothing"), not \(rounds - 1)")
			}
		}
	}

	private static func checkFlush(_ store: any Defaults.Store, _ messages: inout [String]) throws {
		try store.write("kept", forKey: "flushed")
		if !store.flush() {
			messages.append("flush() returned false for a healthy store")
		}
		if store.storedValue(forKey: "flushed") as? String != "kept" {
			messages.append("a value does not read the same after flush()")
		}
	}

	private static func checkOutsideChange(
		_ store: any Defaults.Store, _ outsideChange: OutsideChange, _ messages: inout [String]
	) throws {
		let key = Defaults.Key<Int>("outside", default: 0, suite: store)
		try store.write(1, forKey: "outside")
		_ = store.flush()
		// Read once, so that the key remembers 1: a store that claims to report every change is trusted to.
		_ = store[key]
		let heard = LockedState<Set<String>>([])
		let stopListening = StoreRuntime.of(store).addOutsideListener { keys in heard.withLock { $0.formUnion(keys) } }
		defer { stopListening() }
		try outsideChange(store, "outside", 2)
		let deadline = ContinuousClock.now + .seconds(5)
		while !heard.withLock({ $0.contains("outside") }), ContinuousClock.now < deadline {
			Thread.sleep(forTimeInterval: 0.01)
		}
		if !heard.withLock({ $0.contains("outside") }) {
			messages.append("no report through reportOutsideChanges(_:) within 5 s of an outside change")
		}
		if store.storedValue(forKey: "outside") as? Int != 2 {
			messages.append(
				"after an outside change the store reads \(store.storedValue(forKey: "outside") ?? "nothing"), not 2")
		} else if store[key] != 2 {
			messages.append(
				"after an outside change a key of the store still reads \(store[key]), not 2: a store whose "
					+ "reportsEveryChange is true must report every change it makes itself with reportOutsideChanges(_:)"
			)
		}
	}
}

/// A store used from several threads: the seam requires every store to be safe to use from any thread.
private struct UncheckedStore: @unchecked Sendable {
	let store: any Defaults.Store

	init(_ store: any Defaults.Store) {
		self.store = store
	}
}
