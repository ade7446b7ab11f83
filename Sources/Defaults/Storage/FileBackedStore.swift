import Foundation

/// What a store kept in one settings file offers beyond the seam, to the layers that keep something beside that file
/// (sync's state file) or must know when the file was lost (sync, which must not take a lost file's keys for
/// removals). The file store is the one the package ships; the layers above ask for this, never for the class.
protocol FileBackedStore: Defaults.Store {
	/// The settings file.
	var url: URL { get }
	/// 0 when the store found no loss of its file (missing, empty, unreadable or corrupt) since the last
	/// `clearFileLoss(ifStill:)`; else a mark of the losses found.
	var fileLossMark: Int { get }
	/// Clears the losses found up to `mark`, unless another was found since.
	func clearFileLoss(ifStill mark: Int)
	/// Runs `body` holding the store and the settings file's lock, once this process's changes are in the file and
	/// recorded in its change journal, and other processes' taken in. `body` gets the file's values and returns
	/// values received from elsewhere to write into it: not recorded, not pending here, heard by observers as an
	/// outside change (a key with a change of this process not yet written keeps that change).
	///
	/// - Returns: `body`'s result; `nil` when the file could not be locked, read or written (reported).
	func withFileLocked<T>(_ body: (_ values: [String: Any]) -> (received: [String: Any?], result: T)) -> T?
}

extension Defaults.FileStore: FileBackedStore {}
