import Defaults
import Foundation

/// Configuring sync with an etcd cluster.
extension Defaults.iCloud {
	/// Names the etcd cluster to sync with and starts syncing the keys added so far (and later ones).
	///
	/// Call it once at start-up; a second call stops the first engine (``/Defaults/Defaults/SyncEngine/stop()``,
	/// which waits at most 2 seconds for a step under way) and replaces it. A second call may come from a
	/// ``/Defaults/Defaults/failureHandler`` or an observer, also one running for the engine it replaces: engines
	/// call them without the settings file's lock or the store's, and that engine's `stop()` returns without waiting
	/// for the step that called (the step ends once the handler returns).
	///
	/// ```swift
	/// let etcd = try EtcdClient(endpoints: ["http://127.0.0.1:2379"])
	/// let engine = Defaults.iCloud.configure(remote: etcd, prefix: "/defaults/editor/")
	/// ```
	///
	/// - Parameters:
	///   - remote: The etcd cluster.
	///   - prefix: The remote key prefix for this app or team, such as `"/defaults/editor/"`: machines sharing a
	///     prefix share values. A settings file syncs one prefix: an engine of another prefix on the same file syncs
	///     nothing, and a ``/Defaults/Defaults/Failure`` says why.
	///   - store: The store whose keys are synced.
	///   - stateFile: Where the sync state is kept (what this machine agreed on with etcd); by default
	///     `<settings file>.sync.json` beside a file store's settings file, and in memory only for other stores.
	///     Every engine of a settings file keeps the same one: another live engine of the store with another state
	///     file in this process is reported (a ``/Defaults/Defaults/Failure``).
	/// - Returns: The engine: keep it for its ``/Defaults/Defaults/SyncEngine/status`` and
	///   ``/Defaults/Defaults/SyncEngine/statusUpdates``, its ``/Defaults/Defaults/SyncEngine/conflicts``, and
	///   ``/Defaults/Defaults/SyncEngine/synchronize()``, which says whether every change went out.
	@discardableResult
	public static func configure(
		remote: EtcdClient, prefix: String, store: any Defaults.Store = Defaults.standardStore, stateFile: URL? = nil
	) -> Defaults.SyncEngine {
		configure(
			remote: remote as any Defaults.RemoteKeyValueService, prefix: prefix, store: store, stateFile: stateFile)
	}
}

/// Creating a sync engine for an etcd cluster.
extension Defaults.SyncEngine {
	/// Creates an engine that keeps chosen keys of `store` in step with etcd; it does nothing until keys are added and
	/// it is started (or synchronised). Most apps use ``/Defaults/Defaults/iCloud`` instead; an engine of your own
	/// syncs another store.
	///
	/// ```swift
	/// let engine = Defaults.SyncEngine(remote: etcd, prefix: "/defaults/editor/", store: store)
	/// engine.add(["theme", "fontSize"])
	/// engine.start()
	/// ```
	///
	/// - Parameters:
	///   - remote: The etcd cluster.
	///   - prefix: Prepended to each key name to form the remote key: one prefix per app or team, for example
	///     `"/defaults/editor/"`. Machines sharing a prefix share values. A settings file syncs one prefix: an engine
	///     of another prefix on the same file syncs nothing, and a ``/Defaults/Defaults/Failure`` says why.
	///   - store: The local store.
	///   - stateFile: Where to keep the sync state (what this machine agreed on with etcd); by default
	///     `<settings file>.sync.json` beside a file store's settings file, and in memory only for other stores.
	///     Every engine of a settings file keeps the same one: another live engine of the store with another state
	///     file in this process is reported (a ``/Defaults/Defaults/Failure``).
	public convenience init(
		remote: EtcdClient, prefix: String, store: any Defaults.Store = Defaults.standardStore, stateFile: URL? = nil
	) {
		self.init(
			remote: remote as any Defaults.RemoteKeyValueService, prefix: prefix, store: store, stateFile: stateFile)
	}
}
