import Foundation

/// What a store kept in one settings file offers beyond the seam, to the layers that keep something beside that file
/// (sync's state and journal) and change it under the file's lock. The file store is the one the package ships; the
/// layers above ask for this, never for the class.
protocol FileBackedStore: Defaults.Store {
	/// The settings file.
	var url: URL { get }
	/// Runs `body` holding the store and the settings file's lock, once this process's changes are in the file and
	/// recorded in its change journal, and other processes' taken in. `body` gets the file's values and returns
	/// values received from elsewhere to write into it: not recorded, not pending here, heard by observers as an
	/// outside change (a key with a change of this process not yet written keeps that change).
	///
	/// - Returns: `body`'s result; `nil` when the file could not be locked, read or written (reported).
	func withFileLocked<T>(_ body: (_ values: [String: Any]) -> (received: [String: Any?], result: T)) -> T?
	/// Ends the locked steps for good, once one under way is done, as the process ends (see `withFileLocked`).
	func endLockedSteps()
}

extension Defaults.FileStore: FileBackedStore {}
