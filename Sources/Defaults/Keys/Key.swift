import Foundation
import Synchronization

extension Defaults {
	/// The type-erased base of every key: a name in a store.
	///
	/// Extend it with your keys, so that `Defaults[.name]` finds them:
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let quality = Key<Double>("quality", default: 0.8)
	/// }
	/// ```
	public class Keys: @unchecked Sendable {
		/// A typed key; `Key<Double>` inside `extension Defaults.Keys` names ``Defaults/Key``.
		public typealias Key = Defaults.Key

		/// The name the value is stored under.
		public let name: String

		/// The store the value lives in: the one the key was made with, or, inside a test's isolated scope (the
		/// `DefaultsTesting` library), the in-memory store standing in for it.
		public var suite: any Store {
			Defaults.resolved(declaredSuite)
		}

		/// The store the key was made with, whatever scope the caller runs in.
		@usableFromInline let declaredSuite: any Store

		/// The declared suite's runtime: its change count, its listeners and its record of failed decodes.
		@usableFromInline let declaredRuntime: StoreRuntime

		/// The runtime of ``suite``: the declared suite's, or in a scope the stand-in's, so that a write there is heard
		/// by the scope's observers only, and by no sync engine.
		var runtime: StoreRuntime {
			if let standIn = StandInScope.standIn(for: declaredSuite) {
				return StoreRuntime.of(standIn)
			}
			return declaredRuntime
		}

		init(name: String, suite: any Store, runtime: StoreRuntime) {
			KeyNameRules.check(name)
			self.name = name
			self.declaredSuite = suite
			self.declaredRuntime = runtime
		}

		/// Whether the launch argument or environment variable that overrides the key in `store`, if any, reads as the
		/// key's value (a key of a known type answers; see `Key`).
		func overrideReads(in store: any Store) -> Bool { true }

		/// Whether the key reads `text`, of a launch argument or environment variable, as its value (a key of a known
		/// type answers; see `Key`).
		func readsOverrideText(_ text: Any) -> Bool { true }

		/// Removes the stored value, so that the key reads as its default again.
		public func reset() {
			commit(storedForm: nil)
		}

		/// ``commit(storedForm:)`` of a value that is there: outside every test scope, the value goes to the runtime's
		/// write as it is, never wrapped in an optional, which the write would copy through the value's type to unwrap
		/// (a write of an `Int` costs a dictionary's write and the package's lock and count, little else).
		@usableFromInline
		final func commit(storedValue value: Any) {
			guard !StandInScope.isAnyRunning else {
				commit(storedForm: value)
				return
			}
			declaredRuntime.commit(value: value, forKey: name, in: declaredSuite)
		}

		/// Writes `stored`, already the stored form (`nil` removes the value), to the key's own store through its
		/// runtime's write.
		///
		/// A method of the key rather than a call at the call site, so that the store and the runtime are used through
		/// the key's references to them and not retained for the write (the store's count is on the slow side-table
		/// path: stores are held weakly elsewhere).
		@usableFromInline
		final func commit(storedForm stored: Any?) {
			if let standIn = StandInScope.standIn(for: declaredSuite) {
				StoreRuntime.of(standIn).commit(stored, forKey: name, in: standIn)
				return
			}
			declaredRuntime.commit(stored, forKey: name, in: declaredSuite)
		}
	}

	/// The type-erased key under the name the well-known Defaults package also uses, so that code that spells it out
	/// (`[Defaults._AnyKey]`) compiles unchanged. Prefer ``Defaults/Keys``.
	public typealias _AnyKey = Keys

	/// A typed key: a name, a default value and the store it lives in.
	///
	/// ```swift
	/// extension Defaults.Keys {
	/// 	static let quality = Key<Double>("quality", default: 0.8)
	/// 	static let name = Key<String?>("name")                      // optional: defaults to nil
	/// 	static let camera = Key<String>("camera") { hostName() }   // dynamic: evaluated at each fallback
	/// }
	/// ```
	///
	/// Keys are immutable and `Sendable`, so `static let` keys compile in Swift 6 language mode. A key with a static,
	/// non-nil default registers that default with its store, so that reading the store directly sees it too.
	///
	/// A key remembers the last value it decoded and the stored form it came from, so reading a value whose stored
	/// form has not changed does not decode it again. Reference types are therefore handed out shared: treat
	/// them as immutable.
	public final class Key<Value: Serializable>: Keys, @unchecked Sendable {
		let staticDefault: Value?

		override func overrideReads(in store: any Store) -> Bool { readsItsOverride(in: store) }
		override func readsOverrideText(_ text: Any) -> Bool {
			if case .undecodable = decode(text, isOverrideText: true) {
				return false
			}
			return true
		}
		private let dynamicDefault: DynamicDefault<Value>?

		/// The bridge the key writes with, and reads with first.
		package let bridge: AnyBridge<Value>

		/// Further forms the key accepts when reading, tried in order when ``bridge`` cannot read the stored value.
		///
		/// A value read in one of these forms is rewritten in the current form at the next write, or by a migration's
		/// `.convert(key)`.
		package let alsoReading: [AnyBridge<Value>]

		// Scalars stored as they are are read with a cast; only the type's own bridge allows it.
		@usableFromInline let readsByCast: Bool
		/// Whether a value is its own stored form (`Int`, `Bool`, `Double`, `String`, `Data`, `Date` through their own
		/// bridges): a write then stores it without going through the bridge, whose generic path casts and looks up
		/// metadata on every write.
		@usableFromInline let storesAsIs: Bool
		/// The key's one cache: the value read last in its own store, with its stored form and the store's change
		/// count at that read.
		@usableFromInline let cache = KeyReadCache<Value>()
		/// The runtime's change counter (`runtime.changeCounter`), held here too so that a read reaches the count with
		/// one load less: a quarter of a nanosecond on a read of about one (measured, Docs/Performance.md).
		@usableFromInline let changeCounter: Defaults.ChangeCounter?
		var hasDynamicDefault: Bool { dynamicDefault != nil }

		/// The value the key reads as when nothing valid is stored.
		///
		/// For a key with a dynamic default, the closure runs each time this is read.
		public var defaultValue: Value {
			if let dynamicDefault {
				return dynamicDefault.call()
			}
			return staticDefault!
		}

		private init(
			name: String, suite: any Store, staticDefault: Value?, dynamicDefault: DynamicDefault<Value>?,
			bridge: AnyBridge<Value>?, alsoReading: [AnyBridge<Value>]
		) {
			self.staticDefault = staticDefault
			self.dynamicDefault = dynamicDefault
			self.bridge = bridge ?? .automatic
			self.alsoReading = alsoReading
			// A collection would be cast element by element on every read; the cache serves it better.
			self.readsByCast =
				bridge == nil && alsoReading.isEmpty && Value.isNativelySupportedType
				&& StoredForm.isNormalizedScalarType(StoredForm.unwrappingOptional(Value.self))
			// What `Serializable.storedForm(of:)` returns such a value as: the value itself.
			self.storesAsIs =
				bridge == nil && Value.isNativelySupportedType && StoredForm.isNormalizedScalarType(Value.self)
			let runtime = StoreRuntime.of(suite)
			self.changeCounter = runtime.changeCounter
			super.init(name: name, suite: suite, runtime: runtime)
			// Encoded once, for the declaration check and for the registration.
			let storedDefault = staticDefault.flatMap { try? self.bridge.storedForm(of: $0) }
			runtime.declare(name, valueType: Value.self, storedDefault: storedDefault)
			if let storedDefault {
				runtime.register([name: storedDefault], in: suite)
			}
		}

		/// Creates a key with a static default value.
		///
		/// ```swift
		/// static let quality = Key<Double>("quality", default: 0.8)
		/// static let mime = Key<Mime>("mime", default: .json, bridge: .rawValue)
		/// ```
		///
		/// - Parameters:
		///   - name: The name the value is stored under: ASCII, not starting with `@`, without `.`.
		///   - defaultValue: What the key reads as when nothing is stored. It is registered with `suite`.
		///   - suite: The store the value lives in.
		///   - iCloud: Whether the key is synced across machines, once a remote is configured with
		///     `Defaults.iCloud.configure(remote:prefix:store:stateFile:)` (on Linux: etcd); until then it is stored
		///     locally only. The well-known Defaults package's spelling: `Key<String>("theme", default: "light",
		///     iCloud: true)`.
		///   - bridge: How the key stores its values; `nil` (the default) uses the bridge the type picks. Naming one
		///     pins the stored form against later changes to the type: a built-in form such as `.rawValue`, or a
		///     bridge of your own as `.init(UserBridge())`.
		///   - alsoReading: Older forms to accept when reading, tried in order.
		public convenience init(
			_ name: String, default defaultValue: Value, suite: any Store = Defaults.standardStore,
			iCloud: Bool = false,
			bridge: AnyBridge<Value>? = nil, alsoReading: [AnyBridge<Value>] = []
		) {
			self.init(
				name: name, suite: suite, staticDefault: defaultValue, dynamicDefault: nil, bridge: bridge,
				alsoReading: alsoReading)
			if iCloud {
				Defaults.iCloud.add(self)
			}
		}

		/// Creates a key that stores its values through `bridge`, any ``Defaults/Bridge`` for the value type: the
		/// package's shorthand for `bridge: .init(UserBridge())`, which users write.
		///
		/// ```swift
		/// static let user = Key<User>("user", default: .guest, bridge: UserBridge())
		/// ```
		package convenience init<CustomBridge: Defaults.Bridge>(
			_ name: String, default defaultValue: Value, suite: any Store = Defaults.standardStore,
			bridge: CustomBridge, alsoReading: [AnyBridge<Value>] = []
		) where CustomBridge.Value == Value {
			self.init(
				name: name, suite: suite, staticDefault: defaultValue, dynamicDefault: nil, bridge: AnyBridge(bridge),
				alsoReading: alsoReading)
		}

		/// Creates a key whose default is computed when it is needed.
		///
		/// The closure is evaluated at each read that falls back to the default, and the default is never
		/// registered with the store.
		///
		/// ```swift
		/// static let camera = Key<String>("camera") { ProcessInfo.processInfo.hostName }
		/// ```
		///
		/// The closure need not be `@Sendable`, so code written for the well-known Defaults package compiles
		/// unchanged. Keys are shared between threads, so the key makes the calls safe itself: it never runs the
		/// closure on two threads at once (calls are serialised by a lock of the key's own), so state the closure
		/// alone captures is never raced. State it shares with other code is that code's to protect.
		///
		/// With `iCloud: true` the key is synced across machines, as for ``init(_:default:suite:iCloud:bridge:alsoReading:)``.
		public convenience init(
			_ name: String, suite: any Store = Defaults.standardStore, iCloud: Bool = false,
			bridge: AnyBridge<Value>? = nil, alsoReading: [AnyBridge<Value>] = [],
			default defaultValue: @escaping () -> Value
		) {
			self.init(
				name: name, suite: suite, staticDefault: nil, dynamicDefault: DynamicDefault(defaultValue),
				bridge: bridge, alsoReading: alsoReading)
			if iCloud {
				Defaults.iCloud.add(self)
			}
		}
	}
}

extension Defaults.Key {
	/// Creates an optional key, whose default is `nil`.
	///
	/// ```swift
	/// static let name = Key<String?>("name")
	/// static let theme = Key<Theme?>("theme", bridge: .rawValue)
	/// ```
	///
	/// - Parameters:
	///   - name: The name the value is stored under: ASCII, not starting with `@`, without `.`.
	///   - suite: The store the value lives in.
	///   - iCloud: Whether the key is synced across machines (`Key<String?>("lastFile", iCloud: true)`).
	///   - bridge: How the key stores the wrapped value; `nil` uses the bridge the wrapped type picks.
	///   - alsoReading: Older forms of the wrapped value to accept when reading.
	public convenience init<Wrapped>(
		_ name: String, suite: any Defaults.Store = Defaults.standardStore, iCloud: Bool = false,
		bridge: Defaults.AnyBridge<Wrapped>? = nil, alsoReading: [Defaults.AnyBridge<Wrapped>] = []
	) where Value == Wrapped? {
		self.init(
			name, default: nil, suite: suite, iCloud: iCloud, bridge: bridge.map { .optional($0) },
			alsoReading: alsoReading.map { .optional($0) })
	}
}

extension Defaults.Key where Value: Equatable {
	/// Whether the key currently reads as its default value.
	public var isDefaultValue: Bool {
		suite[self] == defaultValue
	}
}
