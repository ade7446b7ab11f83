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
		/// A second call stops the first engine and replaces it; also from a failure handler or an observer the first
		/// engine runs, whose `stop()` then does not wait for the step that called (see ``SyncEngine/stop()``).
		@discardableResult
		package static func configure(
			remote: any RemoteKeyValueService, prefix: String, store: any Store = Defaults.standardStore,
			stateFile: URL? = nil
		) -> SyncEngine {
			// The previous engine is stopped and let go first, so that a new one with another state file does not find
			// it live and report it (`registerAsRemoteUpdater`). A concurrent call's engine is the `previous` below.
			registry.withLock { registry in
				defer { registry.engine = nil }
				return registry.engine
			}?.stop()
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
		/// ``waitForSyncCompletion()`` (or the engine's ``SyncEngine/synchronize()``) syncs. Setting it to `false`
		/// stops the engine's background sync with ``SyncEngine/stop()``, which waits (at most 2 seconds) for a step
		/// under way.
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
			engine.add(keys.filter { $0.declaredSuite === engine.store }.map(\.name))
			for key in keys where key.declaredSuite !== engine.store {
				Defaults.report(
					Defaults.Failure(
						keyName: key.name, reason: .unsupported,
						message:
							"The key '\(key.name)' lives in another store than the one sync was configured for; it is stored locally only."
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

		/// The configured engine's ``SyncEngine/synchronize()``; `false` when no remote is configured. For the tests:
		/// a program calls ``waitForSyncCompletion()``, or, to know the outcome, the `synchronize()` of the engine
		/// that `configure` returned.
		@discardableResult
		package static func synchronize() async -> Bool {
			await engine?.synchronize() ?? false
		}

		/// ``waitForSyncCompletion()`` under the name the well-known package used for it before its 9.0 release
		/// (where it is internal); nothing here calls it.
		package static func sync() async {
			await synchronize()
		}

		/// Starts a synchronisation and returns at once, as the well-known package's internal method of that name
		/// does; the engine syncs in the background anyway.
		package static func syncWithoutWaiting() {
			Task {
				await synchronize()
			}
		}

		/// What the configured engine is doing now (for the tests: a program reads the ``SyncEngine/status`` of the
		/// engine `configure` returned).
		package static var status: SyncStatus {
			engine?.status ?? SyncStatus(lastError: "no remote is configured")
		}

		/// The configured engine's status now and at each change; ends at once when nothing is configured. The debug
		/// log reads it; a program reads the engine's ``SyncEngine/statusUpdates``.
		package static var statusUpdates: AsyncStream<SyncStatus> {
			engine?.statusUpdates ?? AsyncStream { $0.finish() }
		}

		/// Each local change of a synced key that loses a conflict from now on, as the configured engine's
		/// ``Defaults/SyncEngine/conflicts``, which a program reads; ends at once when nothing is configured.
		package static var conflicts: AsyncStream<SyncConflict> {
			engine?.conflicts ?? AsyncStream { $0.finish() }
		}
	}
}
