import Defaults
import Testing

/// Runs `body` with the standard store, and each store of `stores`, replaced by a fresh in-memory store of its own.
///
/// Every key of a replaced store reads and writes the replacement, wherever it is read from inside `body`: no file
/// is read or written, nothing reaches sync, and code running at the same time outside `body` (another test) sees
/// neither the replacement nor its values. The replacement starts with no values, so keys read the defaults the app
/// registered with the replaced store, else their own; seed it by writing keys at the start of `body`. Use it from
/// XCTest, and wherever a closure covers the code to isolate:
///
/// ```swift
/// func testDarkTheme() {
/// 	withIsolatedDefaults {
/// 		Defaults[.theme] = .dark
/// 		XCTAssertEqual(ThemeModel().background, .black)
/// 	}
/// }
/// ```
///
/// The scope is a task-local value: tasks `body` creates inherit it; code `body` hands to a thread or queue of its
/// own (`Thread`, `DispatchQueue`, `Task.detached`) runs outside it. Scopes nest; an inner one replaces the stores it
/// names afresh and keeps the outer one's replacements of the others.
///
/// - Parameters:
///   - stores: Stores to replace besides `Defaults.standardStore`, such as a suite your keys name.
///   - body: The code to run against the replacements.
public func withIsolatedDefaults<Result>(
	alsoIsolating stores: [any Defaults.Store] = [], _ body: () throws -> Result
) rethrows -> Result {
	try StandInScope(replacing: [Defaults.standardStore] + stores).run(body)
}

/// Runs the asynchronous `body` with the standard store, and each store of `stores`, replaced by a fresh in-memory
/// store of its own, across its suspension points.
///
/// ```swift
/// func testSync() async throws {
/// 	try await withIsolatedDefaults {
/// 		Defaults[.visits] = 3
/// 		try await model.refresh()
/// 		XCTAssertEqual(Defaults[.visits], 4)
/// 	}
/// }
/// ```
///
/// See the synchronous `withIsolatedDefaults(alsoIsolating:_:)` for what the scope covers.
public func withIsolatedDefaults<Result>(
	alsoIsolating stores: [any Defaults.Store] = [], isolation: isolated (any Actor)? = #isolation,
	_ body: () async throws -> Result
) async rethrows -> Result {
	try await StandInScope(replacing: [Defaults.standardStore] + stores).run(isolation: isolation, body)
}

/// Replaces the standard store, and each store of `stores`, by a fresh in-memory store for the rest of the process,
/// for all code that runs outside a scope of its own (`withIsolatedDefaults`, the `.isolatedDefaults` trait), and runs
/// `seed` against the replacements.
///
/// For a preview: a SwiftUI view reads its values when its body is evaluated, after any closure around it returned, so
/// the process as a whole must read the replacements. Call it at the top of the preview; a second call replaces the
/// replacements with fresh ones.
///
/// ```swift
/// #Preview {
/// 	isolateDefaultsForThisProcess {
/// 		Defaults[.theme] = .dark
/// 	}
/// 	return SettingsView()
/// }
/// ```
///
/// Never call it in a test process whose other tests use the real stores: they would read the replacements too.
///
/// - Parameters:
///   - stores: Stores to replace besides `Defaults.standardStore`, such as a suite your keys name.
///   - seed: Writes the values the process starts with.
public func isolateDefaultsForThisProcess(
	alsoIsolating stores: [any Defaults.Store] = [], seed: () throws -> Void = {}
) rethrows {
	try StandInScope(replacing: [Defaults.standardStore] + stores, enclosing: nil).installForProcess(seed: seed)
}

/// A Swift Testing trait that gives each test its own in-memory standard store (and, by choice, other stores).
///
/// On a test, the test runs against stores of its own; on a suite, each of its tests (and each case of a
/// parameterised test) does. Tests that run in parallel never see each other's values, and nothing is written to
/// disk. Write it as `.isolatedDefaults` or `.isolatedDefaults(alsoIsolating:seed:)`:
///
/// ```swift
/// @Suite(.isolatedDefaults { Defaults[.theme] = .dark })
/// struct ThemeTests {
/// 	@Test func background() {
/// 		#expect(ThemeModel().background == .black)
/// 	}
/// }
/// ```
public struct IsolatedDefaultsTrait: TestTrait, SuiteTrait, TestScoping {
	let stores: [any Defaults.Store & Sendable]
	let seed: @Sendable () throws -> Void

	/// Applies to the tests of nested suites too.
	public var isRecursive: Bool { true }

	/// Scopes each test case, never a suite as a whole, so that no two tests share a store.
	public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
		testCase == nil ? nil : self
	}

	/// Runs the test case against fresh stores, seeded first.
	public func provideScope(
		for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
	) async throws {
		try await withIsolatedDefaults(alsoIsolating: stores) {
			try seed()
			try await function()
		}
	}
}

/// The spellings of ``IsolatedDefaultsTrait`` in a test's or a suite's traits: `.isolatedDefaults`, with or without
/// a seed.
extension Trait where Self == IsolatedDefaultsTrait {
	/// Gives each test its own in-memory standard store, with no values, so that keys read as their defaults (the
	/// ones the app registered, else their own).
	///
	/// ```swift
	/// @Test(.isolatedDefaults) func countsVisits() {
	/// 	Defaults[.visits] += 1
	/// 	#expect(Defaults[.visits] == 1)
	/// }
	/// ```
	public static var isolatedDefaults: Self {
		isolatedDefaults()
	}

	/// Gives each test its own in-memory standard store and one for each store of `stores`, seeded by `seed`.
	///
	/// `seed` runs in the test's scope before the test, so it writes the test's stores:
	///
	/// ```swift
	/// @Suite(.isolatedDefaults(alsoIsolating: [Stores.shared]) {
	/// 	Defaults[.theme] = .dark
	/// 	Defaults[.sharedLimit] = 3
	/// })
	/// struct LimitsTests { … }
	/// ```
	///
	/// - Parameters:
	///   - stores: Stores to replace besides `Defaults.standardStore`, such as a suite your keys name.
	///   - seed: Writes the values each test starts with.
	public static func isolatedDefaults(
		alsoIsolating stores: [any Defaults.Store & Sendable] = [], seed: @escaping @Sendable () throws -> Void = {}
	) -> Self {
		IsolatedDefaultsTrait(stores: stores, seed: seed)
	}
}
