import Foundation

extension Defaults {
	/// What a ``Defaults/SyncEngine`` is doing, for a status line.
	///
	/// ```swift
	/// let engine = Defaults.iCloud.configure(remote: etcd, prefix: "/defaults/editor/")
	/// for await status in engine.statusUpdates {
	/// 	label = status.isConnected ? "Synced" : "Offline, \(status.pendingCount) waiting"
	/// }
	/// ```
	public struct SyncStatus: Sendable, Equatable {
		/// Whether the remote answered the last request and the watch is running.
		public var isConnected: Bool
		/// How many synced keys have local changes the remote has not taken yet.
		public var pendingCount: Int
		/// The last error met talking to the remote, `nil` once it answers again; while the sync state file cannot be
		/// written, a sentence naming it.
		public var lastError: String?
		/// The remote's revision the engine has seen changes up to: for the tests, which wait for it to pass a
		/// revision, and for the debug log (``Defaults/iCloud/isDebug``), which prints it.
		package var revision: Int64

		/// Creates a status.
		package init(isConnected: Bool = false, pendingCount: Int = 0, lastError: String? = nil, revision: Int64 = 0) {
			self.isConnected = isConnected
			self.pendingCount = pendingCount
			self.lastError = lastError
			self.revision = revision
		}
	}
}
