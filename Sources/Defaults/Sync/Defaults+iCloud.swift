import Foundation
import Synchronization

extension Defaults {
	// swift-format-ignore: TypeNamesShouldBeCapitalized
	/// Syncs chosen keys across machines, with the names of the well-known package's iCloud API; on Linux the remote
	/// is an etcd cluster, named once at start-up with the `configure(remote:prefix:store:stateFile:)` of `DefaultsEtcd`.
	///
	/// ```swift
	/// import DefaultsEtcd
	///
	/// Defaults.iCloud.configure(
	/// 	remote: try EtcdClient(endpoints: ["http://127.0.0.1:2379"]), prefix: "/defaults/editor/")
	///
	/// extension Defaults.Keys {
	/// 	static let theme = Key<String>("theme", default: "light", iCloud: true)
	/// }
	/// Defaults.iCloud.add(.fontSize)  // a key declared without `iCloud: true`
	/// ```
	///
	/// Keys can be added before the remote is configured; they start syncing once it is. Only keys of the configured
	/// store are synced (``Defaults/standardStore`` unless another is named). A key declared with `iCloud: true`
	/// is added when it is first used: Swift creates `static let` keys lazily, so add keys that must sync before
	/// their first use explicitly.
	public enum iCloud {
		struct Registry {
			var engine: SyncEngine?
			/// The keys added, in order; two keys are the same when they name the same value in the same store.
			var keys: [Defaults.Keys] = []
			var isSyncingAutomatically = true
		}

		static let registry = LockedState(Registry())

		/// Names the remote and starts syncing the keys added so far (and later ones): the seam behind the public
		/// `configure(remote:prefix:store:stateFile:)` that the `DefaultsEtcd` library adds for an `EtcdClient`.
		///
		/// A second call stops the first engine and replaces it.
		@discardableResult
		package static func configure(
			remote: any RemoteKeyValueService, prefix: String, store: any Store = Defaults.standardStore,
			stateFile: URL? = nil
		) -> SyncEngine {
			let engine = SyncEngine(remote: remote, prefix: prefix, store: store, stateFile: stateFile)
			let (previous, names, isAutomatic) = registry.withLock { registry in
				defer { registry.engine = engine }
				let names = registry.keys.filter { $0.declaredSuite === store }.map(\.name)
				return (registry.engine, names, registry.isSyncingAutomatically)
			}
			previous?.stop()
			engine.add(names)
			if isAutomatic {
				engine.start()
			}
			return engine
		}

		/// The engine `configure(remote:prefix:store:stateFile:)` made, or `nil`.
		package static var engine: SyncEngine? {
			registry.withLock { $0.engine }
		}

		/// Whether changes are pushed and pulled in the background (the default); when `false`, only
		/// ``synchronize()`` syncs.
		public static var isSyncingAutomatically: Bool {
			get { registry.withLock { $0.isSyncingAutomatically } }
			set {
				let engine = registry.withLock { registry in
					registry.isSyncingAutomatically = newValue
					return registry.engine
				}
				if newValue {
					engine?.start()
				} else {
					engine?.stop()
				}
			}
		}

		/// Syncs `keys`.
		///
		/// ```swift
		/// Defaults.iCloud.add(.theme, .fontSize)
		/// ```
		public static func add(_ keys: Defaults.Keys...) {
			add(keys)
		}

		/// Syncs `keys`.
		///
		/// ```swift
		/// Defaults.iCloud.add([.theme, .fontSize])
		/// ```
		public static func add(_ keys: [Defaults.Keys]) {
			let engine = registry.withLock { registry in
				for key in keys where !registry.keys.contains(key) {
					registry.keys.append(key)
				}
				return registry.engine
			}
			guard let engine else {
				return
			}
			let (mine, others) = keys.reduce(into: ([String](), [String]())) { result, key in
				if key.declaredSuite === engine.store {
					result.0.append(key.name)
				} else {
					result.1.append(key.name)
				}
			}
			engine.add(mine)
			for name in others {
				Defaults.report(
					Defaults.Failure(
						keyName: name, reason: .unsupported,
						message:
							"The key '\(name)' lives in another store than the one sync was configured for; it is stored locally only."
					))
			}
		}

		/// Stops syncing `keys`; their local values stay.
		public static func remove(_ keys: Defaults.Keys...) {
			remove(keys)
		}

		/// Stops syncing `keys`; their local values stay.
		public static func remove(_ keys: [Defaults.Keys]) {
			let engine = registry.withLock { registry in
				registry.keys.removeAll { keys.contains($0) }
				return registry.engine
			}
			engine?.remove(keys.map(\.name))
		}

		/// Stops syncing every key.
		public static func removeAll() {
			let engine = registry.withLock { registry in
				registry.keys = []
				return registry.engine
			}
			if let engine {
				engine.remove(Array(engine.names))
			}
		}

		/// Pushes pending local changes and pulls the latest remote values now.
		///
		/// - Returns: whether the remote answered and every pending change went out; `false` also when no remote is
		///   configured (``SyncEngine/synchronize()`` says more).
		@discardableResult
		public static func synchronize() async -> Bool {
			await engine?.synchronize() ?? false
		}

		/// ``synchronize()`` under the well-known package's name.
		public static func sync() async {
			await synchronize()
		}

		/// Starts ``synchronize()`` and returns at once, as the well-known package's method of that name does.
		public static func syncWithoutWaiting() {
			Task {
				await synchronize()
			}
		}

		/// What sync is doing now: connected, how many changes wait, the last error.
		public static var status: SyncStatus {
			engine?.status ?? SyncStatus(lastError: "no remote is configured")
		}

		/// The configured engine's status now and at each change; ends at once when nothing is configured.
		public static var statusUpdates: AsyncStream<SyncStatus> {
			guard let engine else {
				return AsyncStream { $0.finish() }
			}
			return engine.statusUpdates
		}

		/// Each local change of a synced key that loses a conflict from now on, as the configured engine's
		/// ``Defaults/SyncEngine/conflicts``; ends at once when nothing is configured.
		///
		/// ```swift
		/// for await conflict in Defaults.iCloud.conflicts {
		/// 	print("kept the other machine's value of \(conflict.keyName)")
		/// }
		/// ```
		public static var conflicts: AsyncStream<SyncConflict> {
			guard let engine else {
				return AsyncStream { $0.finish() }
			}
			return engine.conflicts
		}
	}
}
