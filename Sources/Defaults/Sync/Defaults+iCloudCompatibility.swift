import Foundation
import Synchronization

// The rest of the well-known package's iCloud API, so that code written for it compiles and means the same here.
extension Defaults.iCloud {
	/// The keys that are synced: those declared with `iCloud: true` (once used) and those passed to
	/// ``add(_:)-(Defaults.Keys...)``, less those removed.
	///
	/// ```swift
	/// Defaults.iCloud.add(.theme)
	/// Defaults.iCloud.keys.contains(.theme)   // true
	/// ```
	public static var keys: Set<Defaults.Keys> {
		Set(registry.withLock { $0.keys })
	}

	/// Waits until the changes made so far are pushed and the latest remote values are pulled.
	///
	/// Syncing is automatic; call this where the program must not go on before its changes are on the remote, such as
	/// before it exits. It returns at once when no remote is configured, and when the remote cannot be reached (the
	/// changes then stay queued, and are pushed when it answers again). The engine `configure` returned does the same with
	/// ``Defaults/SyncEngine/synchronize()``, which says whether the remote answered and every change went out.
	///
	/// ```swift
	/// Defaults[.theme] = "dark"
	/// await Defaults.iCloud.waitForSyncCompletion()
	/// ```
	public static func waitForSyncCompletion() async {
		await synchronize()
	}

	/// Whether to log what sync does: each change of the configured engine's ``Defaults/SyncEngine/status``
	/// (connected, pending changes, last error) is written to standard error, prefixed with `Defaults.iCloud:`.
	///
	/// Set it before or after `configure(remote:prefix:store:stateFile:)`: set before, it starts logging once an
	/// engine is configured.
	///
	/// ```swift
	/// Defaults.iCloud.isDebug = true
	/// Defaults.iCloud.configure(remote: client, prefix: "/defaults/editor/")
	/// ```
	public static var isDebug: Bool {
		get { debugLog.withLock { $0 != nil } }
		set {
			let stopped = debugLog.withLock { log -> Task<Void, Never>? in
				if newValue {
					if log == nil {
						log = Task.detached { await logStatusChanges() }
					}
					return nil
				}
				defer { log = nil }
				return log
			}
			stopped?.cancel()
		}
	}

	private static let debugLog = LockedState<Task<Void, Never>?>(nil)

	private static func logStatusChanges() async {
		// Set before `configure`, as code written for the well-known package does: wait for the engine. Polled, since
		// this is a debugging aid that runs only while it is on.
		while engine == nil {
			try? await Task.sleep(for: .milliseconds(100))
			if Task.isCancelled {
				return
			}
		}
		for await status in statusUpdates {
			if Task.isCancelled {
				return
			}
			writeToStandardError("Defaults.iCloud: \(status)\n")
		}
	}
}
