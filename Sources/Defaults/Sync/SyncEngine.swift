import Foundation
import Synchronization

extension Defaults {
	/// Keeps chosen keys of one store in step with etcd, on every machine that runs it with the same prefix.
	///
	/// Most apps configure one through ``Defaults/iCloud`` instead; create engines directly (with the initialiser the
	/// `DefaultsEtcd` library adds, from an `EtcdClient`) to sync several stores, or in benchmarks.
	///
	/// The local store stays the source of every read and write. The engine hears local changes of its keys and
	/// pushes their stored forms, and applies remote changes to the store, where observers hear them like any change.
	/// The rule for conflicts: of two changes to a key made without seeing each other, the one etcd commits first is
	/// kept on every machine, and the other machine is told (``conflicts`` and a ``Defaults/Failure``). Every push
	/// is a compare-and-swap against the key's revision this machine last saw, so a change made knowing the latest
	/// remote value always goes through. A value the remote refuses as too large stays on its machine until the key
	/// changes again. See <doc:SyncingAcrossMachines>.
	///
	/// ```swift
	/// let engine = Defaults.SyncEngine(remote: etcd, prefix: "/defaults/editor/", store: store)
	/// engine.add(["theme", "fontSize"])
	/// engine.start()
	/// ```
	public final class SyncEngine: RemoteUpdater, Sendable {
		/// The remote this engine syncs with.
		package let remote: any RemoteKeyValueService
		/// The remote key prefix every synced key name is appended to.
		package let prefix: String
		nonisolated(unsafe) private let storeReference: any Store
		/// Where the engine keeps what it last agreed with the remote; `nil` keeps it in memory only.
		package let stateFile: URL?

		let worker: SyncWorker
		private let wake = WakeSignal()
		private let intents: IntentLog
		private let observations = LockedState<[LocalChangeObservation]>([])
		private let loop = LockedState<Task<Void, Never>?>(nil)
		private let statusBroadcast = Broadcast<Defaults.SyncStatus>(
			current: Defaults.SyncStatus(), buffered: 1, isSame: ==)
		private let conflictBroadcast = Broadcast<Defaults.SyncConflict>(current: nil, buffered: 100)

		/// The store whose keys are synced (the one it was made with, which its maker holds).
		package var store: any Store { storeReference }

		/// Creates an engine; it does nothing until keys are added and it is started (or synchronised).
		///
		/// The remote is a package seam, not a public protocol: etcd is the one service settings sync through (the
		/// `DefaultsEtcd` library's initialiser is the public one), and tests put a fake behind the seam.
		///
		/// - Parameters:
		///   - remote: The service to sync with.
		///   - prefix: Prepended to each key name to form the remote key: one prefix per app or team, for example
		///     `"/defaults/editor/"`. Machines sharing a prefix share values.
		///   - store: The local store.
		///   - stateFile: Where to keep the sync state; by default beside a file store's settings file.
		package init(
			remote: any RemoteKeyValueService, prefix: String, store: any Store = Defaults.standardStore,
			stateFile: URL? = nil
		) {
			self.remote = remote
			self.prefix = prefix
			self.storeReference = store
			let stateFile = stateFile ?? Self.defaultStateFile(for: store)
			self.stateFile = stateFile
			let loaded = Self.loadState(from: stateFile, for: store)
			let intents = IntentLog(
				isInMemory: Self.journal(of: store) == nil, settled: loaded.state?.sequenceFloor.first?.s ?? 0)
			self.intents = intents
			self.worker = SyncWorker(
				remote: remote, prefix: prefix, store: StoreBox(store), loaded: loaded,
				stateFile: stateFile, status: statusBroadcast, conflicts: conflictBroadcast, intents: intents)
			Self.pushAtExit(self)
			// A synchronous update of the store then refuses the engine's keys, and an asynchronous one finds it.
			Self.registerAsRemoteUpdater(self)
		}

		deinit {
			Self.forgetAtExit(self)
			stop()
			for observation in observations.withLock({ $0 }) {
				observation.cancel()
			}
		}

		/// Syncs the keys named `names`: local changes are pushed, remote ones applied. A name added for the first
		/// time is compared with the remote at the next synchronisation.
		public func add(_ names: [String]) {
			let new = worker.addNames(names)
			guard !new.isEmpty else {
				return
			}
			let observation = Self.observeLocalChanges(
				of: new, in: storeReference, recordingIn: intents, wake: wake)
			observations.withLock { $0.append(observation) }
			wake.signal()
		}

		/// Stops syncing the keys named `names`; their local values stay as they are.
		public func remove(_ names: [String]) {
			worker.removeNames(names)
			// Listening again for the names left, so that writes of removed keys no longer wake the engine and a key
			// added again is not heard twice.
			let remaining = Array(worker.currentNames)
			let replacement =
				remaining.isEmpty
				? nil
				: Self.observeLocalChanges(of: remaining, in: storeReference, recordingIn: intents, wake: wake)
			let replaced = observations.withLock { observations in
				defer { observations = replacement.map { [$0] } ?? [] }
				return observations
			}
			for observation in replaced {
				observation.cancel()
			}
		}

		/// The names of the keys synced.
		package var names: Set<String> {
			worker.currentNames
		}

		/// Whether the engine syncs `name`: its updates are compare-and-swaps against the remote.
		func updatesRemotely(_ name: String) -> Bool {
			worker.currentNames.contains(name)
		}

		/// How long ``stop()`` waits for a step under way to end. A step that is not waiting for the remote ends in
		/// milliseconds; one waiting for a push's reply ends when the reply comes, which a reachable remote gives
		/// well within this on a loaded machine, and which a request in flight to an unreachable one would only give
		/// at its time-out (the etcd client's is 5 s, per endpoint tried), too long to hold the caller. The same as
		/// the exit's wait for pushes (``exitWait``), for the same kind of step.
		package static let stopWait: Duration = .seconds(2)

		/// Starts syncing in the background: pushes, a watch for remote changes, reconnecting with backoff.
		public func start() {
			loop.withLock { loop in
				guard loop == nil else {
					return
				}
				worker.backgroundSteps.open()
				loop = Task { [worker, wake] in
					await worker.run(wake: wake)
				}
			}
		}

		/// Stops the background sync; local reads and writes go on, and changes wait for the next start.
		///
		/// A step under way (a push waiting for its reply, a read of the remote, remote changes being applied) is
		/// let finish, and `stop()` returns once it has: from then on the background sync writes neither the store
		/// nor the sync state file, and starts no step. With no step under way it returns at once. The wait is
		/// bounded by 2 seconds from the first `stop()`, so that a push whose request is in flight to a remote that
		/// does not answer cannot hold the caller until the request's time-out; such a push may still record its reply
		/// in the state file after `stop()` returned. The calling thread blocks meanwhile. Another call meanwhile
		/// waits with the first, until the same moment; one after that bound (the engine's release among them) does
		/// not wait again.
		///
		/// Called from code the engine runs on its own thread (a failure handler with one of the engine's reports, or
		/// an observer of a value it applies, often in a step), it returns without waiting: the engine's steps go on
		/// only once that code returns, and no new one starts after them. The engine runs that code without the
		/// settings file's lock or the store's own (each step's reports and observers come once it has released them),
		/// so the code may also read, write and flush the store, make an engine of it or call
		/// `Defaults.iCloud.configure` again, and stop another engine: that `stop()` waits for the other engine's step
		/// as it would anywhere else, at most 2 seconds (a push pass reports while it holds the file's push lock: a
		/// background pass of the other engine waiting for that lock ends with the stop, and `stop()` never waits for
		/// a pass that a `synchronize()` or an update runs).
		/// Two engines' handlers that stop each other at the same moment wait for each other's step, each until its
		/// 2 seconds run out.
		public func stop() {
			let task = loop.withLock { loop in
				// Closed under the lock that `start()` opens them under: a second caller finds them closed.
				worker.backgroundSteps.close()
				defer { loop = nil }
				return loop
			}
			task?.cancel()
			guard worker.threadCallingTheApp.withLock({ $0 }) != ObjectIdentifier(Thread.current) else {
				return
			}
			worker.backgroundSteps.waitUntilNoneUnderWay()
		}

		/// Whether the background sync runs.
		package var isRunning: Bool {
			loop.withLock { $0 != nil }
		}

		/// Pushes what is pending and pulls the latest remote values now.
		///
		/// - Returns: whether the remote answered and every pending change went out (or lost its conflict). `false`
		///   when the remote could not be reached or the settings file could not be written (the changes stay queued,
		///   see ``status``; a failure to write is reported as a ``Defaults/Failure``), while a synced key's value is
		///   held on this machine only because the remote refused it as too large (a ``Defaults/Failure`` said so:
		///   for a pushed value once, whichever sync found it; for a value put back after a lost state or remote once
		///   per engine, and again if refused after a write of the key from here landed, or a put-back of it met
		///   another value; each call offers it again, until the remote takes it or the key changes again, here or on
		///   another machine: a value another machine put back after a lost remote is no change, and a pushed value
		///   held goes out over it), or when pushes kept meeting this machine's own earlier ones, committed though
		///   their replies were lost (the value goes out with the next pass).
		@discardableResult
		public func synchronize() async -> Bool {
			await worker.synchronize()
		}

		/// Whether local changes (written here, or recorded and not pushed at the last pass) wait to be pushed.
		var hasPendingChanges: Bool {
			intents.unsettled.load(ordering: .relaxed) > 0
		}

		/// Pushes what is pending, once, without reading the remote.
		func pushPendingNow() async {
			await worker.pushOnce()
		}

		/// What the engine is doing now.
		public var status: SyncStatus {
			statusBroadcast.current ?? Defaults.SyncStatus()
		}

		/// The status now and at each change, for a status line.
		public var statusUpdates: AsyncStream<SyncStatus> {
			statusBroadcast.stream()
		}

		/// Each local change that loses a conflict from now on: this machine pushed it without knowing the remote's
		/// newer value, so the remote value replaced it here. A ``Defaults/Failure`` reports it too.
		///
		/// ```swift
		/// for await conflict in engine.conflicts {
		/// 	print("kept the other machine's value of \(conflict.keyName)")
		/// }
		/// ```
		public var conflicts: AsyncStream<SyncConflict> {
			conflictBroadcast.stream()
		}
	}
}

/// A store handed between tasks: stores are safe to use from any thread (see ``Defaults/Store``), though the
/// protocol does not say `Sendable`.
struct StoreBox: @unchecked Sendable {
	let store: any Defaults.Store

	init(_ store: any Defaults.Store) {
		self.store = store
	}
}

/// Hands values to any number of listeners, each a stream that keeps the newest `buffered`: the engine's status (a
/// new listener gets the current one first; one equal to it is not sent) and the conflicts it lost.
final class Broadcast<Value: Sendable>: Sendable {
	private struct State {
		var current: Value?
		var listeners: [UUID: AsyncStream<Value>.Continuation] = [:]
	}

	private let state: LockedState<State>
	private let buffered: Int
	private let isSame: @Sendable (Value, Value) -> Bool

	/// - Parameter current: the value a new listener gets first, kept up to date; `nil` for none.
	init(current: Value?, buffered: Int, isSame: @escaping @Sendable (Value, Value) -> Bool = { _, _ in false }) {
		state = LockedState(State(current: current))
		self.buffered = buffered
		self.isSame = isSame
	}

	var current: Value? {
		state.withLock { $0.current }
	}

	func send(_ value: Value) {
		let listeners = state.withLock { state -> [AsyncStream<Value>.Continuation] in
			if let current = state.current {
				guard !isSame(current, value) else {
					return []
				}
				state.current = value
			}
			return Array(state.listeners.values)
		}
		for listener in listeners {
			listener.yield(value)
		}
	}

	func stream() -> AsyncStream<Value> {
		let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(buffered))
		let id = UUID()
		let current = state.withLock { state in
			state.listeners[id] = continuation
			return state.current
		}
		if let current {
			continuation.yield(current)
		}
		continuation.onTermination = { [weak self] _ in
			self?.state.withLock { _ = $0.listeners.removeValue(forKey: id) }
		}
		return stream
	}
}
