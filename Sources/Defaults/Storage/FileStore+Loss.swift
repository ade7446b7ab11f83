import Synchronization

// Whether the store's values may be less than its file held: the file was found missing, empty, unreadable or
// corrupt. Kept until cleared, since one write after the loss makes a sound file again while what it lost stays lost:
// a reader that acts on missing keys (sync, which must not take them for removals) clears it once it has put back
// what it knows.
extension Defaults.FileStore {
	/// Notes a loss, before the store takes in what it read.
	func noteFileLost() {
		fileLosses.wrappingAdd(1, ordering: .sequentiallyConsistent)
	}

	/// 0 when no loss was found since the last ``clearFileLoss(ifStill:)``; else a mark of the losses found.
	var fileLossMark: Int {
		fileLosses.load(ordering: .sequentiallyConsistent)
	}

	/// Clears the losses found up to `mark`, unless another was found since.
	func clearFileLoss(ifStill mark: Int) {
		_ = fileLosses.compareExchange(expected: mark, desired: 0, ordering: .sequentiallyConsistent)
	}
}
