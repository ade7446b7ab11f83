import Foundation
import Synchronization

/// Stores that stand in for others while some code runs: a test's own in-memory store in place of the standard store
/// (the `DefaultsTesting` library's `.isolatedDefaults` trait and `withIsolatedDefaults`), or a preview's for the rest
/// of its process (`isolateDefaultsForThisProcess`).
///
/// The scope is a task-local, so tests running in parallel each see their own stand-ins, and code outside any scope
/// sees the stores it names. Keys find their store through it (`Keys.suite`, `Keys.runtime`): reads, writes, resets,
/// updates, locks and observation all reach the stand-in, and the stand-in's own runtime, so observers of one test
/// never hear another's writes and sync engines, which listen to the real store's runtime, hear nothing.
///
/// What a read outside every scope pays: nothing on the fast path. While a store is stood in for anywhere in the
/// process, its change counter carries `ChangeCounter.standInFlag`, which no key's cache remembers, so every read of
/// the store misses its cache and comes here; `activeScopes` (process-wide: a scope is a test process's notion, and
/// nothing per store can tell a task that it is in one) keeps the other slow paths to one relaxed load while no scope
/// exists.
package final class StandInScope: @unchecked Sendable {
	// Unchecked: immutable after init; the stores are `Sendable` where they are made (`InMemoryStore`) and only
	// compared by identity where they are not.

	/// The stand-in of each replaced store, by the replaced store's identity.
	private let standIns: [ObjectIdentifier: any Defaults.Store]
	/// The replaced stores, held so that their identities are not reused while the scope lasts.
	private let replaced: [any Defaults.Store]

	/// A scope in which each store of `replacing` reads and writes a fresh, empty `InMemoryStore`, on top of the
	/// stand-ins of `enclosing` for the stores it does not name.
	///
	/// A stand-in holds no values, but reads the defaults registered with the store it replaces (with the enclosing
	/// scope's stand-in, for a store that one replaced), as they are at each read, beneath its own: registering is part
	/// of how the app reads (its setup, or a distribution's defaults), so a test reads what the app reads until it
	/// writes a value, or registers one on the store its keys read in the scope.
	package init(replacing stores: [any Defaults.Store], enclosing: StandInScope? = StandInScope.enclosing) {
		var standIns = enclosing?.standIns ?? [:]
		var replaced = enclosing?.replaced ?? []
		for store in stores {
			if !replaced.contains(where: { $0 === store }) {
				replaced.append(store)
			}
			// A store the enclosing scope replaced already gets a fresh stand-in too, beneath which the enclosing
			// one's registrations show.
			let beneath = RegistrationSource(store: standIns[ObjectIdentifier(store)] ?? store)
			standIns[ObjectIdentifier(store)] = Defaults.InMemoryStore { beneath.store.registeredValue(forKey: $0) }
		}
		self.standIns = standIns
		self.replaced = replaced
	}

	/// The store standing in for `store`, if this scope replaces it.
	package func standIn(for store: any Defaults.Store) -> (any Defaults.Store)? {
		standIns[ObjectIdentifier(store)]
	}

	// MARK: The current scope

	/// The scope the current task (or thread, outside tasks) runs in.
	@TaskLocal package static var current: StandInScope?

	/// How many scopes are running in the process: while none is, a store's stand-in is found with one relaxed load.
	private static let activeScopes = Atomic<Int>(0)

	/// The scope of every task and thread that is in no scope of its own, once one is installed for the rest of the
	/// process (a preview, whose views read their values long after any closure returned).
	private static let processScope = LockedState<StandInScope?>(nil)

	/// Whether any scope runs in the process, with one relaxed load: a write outside every scope checks nothing else.
	@inline(__always)
	static var isAnyRunning: Bool {
		activeScopes.load(ordering: .relaxed) > 0
	}

	/// The scope a new scope starts from: the current task's, else the process's.
	package static var enclosing: StandInScope? {
		guard activeScopes.load(ordering: .relaxed) > 0 else {
			return nil
		}
		return current ?? processScope.withLock { $0 }
	}

	/// The store standing in for `store` in the current scope, or `nil` outside one or when the scope keeps `store`.
	package static func standIn(for store: any Defaults.Store) -> (any Defaults.Store)? {
		enclosing?.standIn(for: store)
	}

	/// Makes this the scope of all code outside a scope of its own, for the rest of the process, in place of the one
	/// installed before; `seed` runs in it.
	package func installForProcess<Result>(seed: () throws -> Result) rethrows -> Result {
		begin()
		let previous = Self.processScope.withLock { scope in
			defer { scope = self }
			return scope
		}
		previous?.end()
		return try Self.$current.withValue(self, operation: seed)
	}

	/// Runs `body` in this scope.
	package func run<Result>(_ body: () throws -> Result) rethrows -> Result {
		begin()
		defer { end() }
		return try Self.$current.withValue(self, operation: body)
	}

	/// Runs the asynchronous `body` in this scope, across its suspension points.
	package func run<Result>(
		isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> Result
	) async rethrows -> Result {
		begin()
		defer { end() }
		return try await Self.$current.withValue(self, operation: body, isolation: isolation)
	}

	/// Marks the replaced stores as stood in for, so that their keys' caches no longer answer reads.
	private func begin() {
		Self.activeScopes.add(1, ordering: .relaxed)
		for store in replaced {
			StoreRuntime.of(store).beginStandIn()
		}
	}

	private func end() {
		for store in replaced {
			StoreRuntime.of(store).endStandIn()
		}
		Self.activeScopes.subtract(1, ordering: .relaxed)
	}
}

/// The store whose registered defaults a stand-in reads, handed to the stand-in's reads on any thread.
///
/// Unchecked: `registeredValue(forKey:)` reads only the stores the package ships (each behind its own lock, or
/// Foundation's, thread-safe) and returns `nil` for any other without touching it.
private struct RegistrationSource: @unchecked Sendable {
	let store: any Defaults.Store
}

extension Defaults {
	/// `store`, or the store standing in for it in the current scope.
	static func resolved(_ store: any Store) -> any Store {
		StandInScope.standIn(for: store) ?? store
	}
}
