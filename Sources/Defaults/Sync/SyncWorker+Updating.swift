import Foundation

// The worker's part of an atomic update (the compare-and-swap loop itself is `SyncEngine+AtomicUpdate.swift`):
// what must happen before the first read, and taking the committed value as agreed and applied.
extension SyncWorker {
	/// Makes the remote the whole truth about `keyNames` before an update reads it: keys never read are read, and a
	/// local change of one that waits to be pushed is pushed first, under the conflict rule like any push (one that
	/// loses is reported as a lost conflict, not dropped silently). An update reads the remote, so skipping that
	/// push would overwrite the local change with a value computed without it.
	///
	/// - Throws: ``Defaults/SyncedUpdateError`` when the remote cannot be reached or the local change stays unpushed;
	///   then nothing was changed by the update (the local change stays queued, as any offline write).
	func prepareAtomicUpdate(of keyNames: [String]) async throws {
		var unpushed: [String] = []
		do {
			// Also before reading a remote not known to be the one the state knows (see `isRemoteVerified`): an update
			// on a wiped remote would count from its emptiness, not from the values every machine holds.
			if stateLoss != nil || !isRemoteVerified || names.withLock({ !$0.unread.isDisjoint(with: keyNames) }) {
				try await readEverything()
			}
			if try !unpushedLocalChanges(of: keyNames).isEmpty {
				try await pushPending()
				unpushed = try unpushedLocalChanges(of: keyNames)
			}
		} catch let error as StateOfAnotherPrefix {
			didDisconnect(error)
			throw Defaults.SyncedUpdateError(
				keyNames: keyNames, reason: .refused,
				message:
					"The update of \(AtomicUpdateLoop.quoted(keyNames)) was not made: \(error). Nothing was changed.")
		} catch let error as Defaults.RemoteServiceError {
			didDisconnect(error)
			throw Defaults.SyncedUpdateError(
				keyNames: keyNames, reason: error.isRefusal ? .refused : .unreachable,
				message:
					"The update of \(AtomicUpdateLoop.quoted(keyNames)) was not made: the remote could not be reached to read the keys and push their local changes first (\(error)). An atomic update of a synced key needs the remote; nothing was changed, locally or remotely."
			)
		}
		guard unpushed.isEmpty else {
			throw Defaults.SyncedUpdateError(
				keyNames: keyNames, reason: .localChangeNotPushed,
				message:
					"The update of \(AtomicUpdateLoop.quoted(keyNames)) was not made: the local change of \(unpushed.joined(separator: ", ")) could not be pushed first (see the sync status); nothing was changed."
			)
		}
	}

	/// The highest revision this machine has seen, for an atomic update to take before it reads.
	func knownRevision() -> Int64 {
		state.knownRevision
	}

	/// The keys with a change recorded in the journal and not pushed (or whose settings file cannot be read now).
	///
	/// - Throws: ``StateOfAnotherPrefix`` when that is why the step was refused: no change of this prefix waits then.
	private func unpushedLocalChanges(of keyNames: [String]) throws -> [String] {
		let pending = locked { local in
			keyNames.filter { isPending($0, in: local) }
		}
		guard let pending else {
			try checkPrefix(of: stateBeforeRead())
			return keyNames
		}
		return pending
	}

	/// The marks of an update's next tries: this machine's id and sequences of the journal of their own, taken in one
	/// append under the settings file's lock, so that a try's commit is known as this machine's own (also through
	/// another process of the file, or after its answer was lost). A change of the keys recorded and not pushed yet
	/// is recorded again after them: it counts as made after the update, and is pushed over it.
	func marksForUpdate(of keyNames: [String]) throws -> [SyncedValueCoding.Mark] {
		let marks = locked { local -> [SyncedValueCoding.Mark] in
			let pending = keyNames.filter { isPending($0, in: local) }
			let count = Self.marksPerReservation
			guard let machine = state.machine, let line = local.record([nil] + pending, reserving: count - 1).first
			else {
				return []
			}
			state.reserveSequences(through: line.s)
			return (line.s - count + 1...line.s).map { SyncedValueCoding.Mark(machine: machine, sequence: $0) }
		}
		guard let marks, !marks.isEmpty else {
			throw Defaults.SyncedUpdateError(
				keyNames: keyNames, reason: .refused,
				message:
					"The update of \(AtomicUpdateLoop.quoted(keyNames)) was not made: the sync journal beside the settings file could not be written, so the update could not be marked as this machine's; nothing was changed."
			)
		}
		// As a push (`awaitingDurableReservation`): a mark whose sequence is reserved in memory only could be given to
		// another change by a next run, and this update's commit would then settle that change.
		guard marks.allSatisfy({ $0.sequence <= durableReservation }) else {
			throw Defaults.SyncedUpdateError(
				keyNames: keyNames, reason: .refused,
				message:
					"The update of \(AtomicUpdateLoop.quoted(keyNames)) was not made: the sync state file \(stateFile?.path ?? "") could not be written, and the numbers that mark the update as this machine's must be on disk first; nothing was changed."
			)
		}
		return marks
	}

	/// How many marks an update takes at once: most updates need one try, a few more under contention.
	static let marksPerReservation = 8

	/// The remote holds an update's keys as `agreed` (the update's commit, or what came after it): agreed on, and
	/// applied to the local store as a remote change is (observers hear one change per key; nothing is recorded, so
	/// no push follows).
	///
	/// A key another process of this settings file, or the watch, already brought to its revision or later is left
	/// alone (`apply` skips what the state has seen). A key with a change recorded while the update ran keeps that
	/// change, which counts as made after the update: it is pushed against that revision.
	func agreeOnAtomicUpdate(_ agreed: [Defaults.RemoteEntry]) {
		heardFromRemote()
		let wakes = locked { local in
			apply(agreed.map { .put($0) }, local: &local)
			return agreed.contains { name(ofRemoteKey: $0.key).map { isPending($0, in: local) } ?? false }
		}
		if wakes == true {
			wakeToPushAgain()
		}
		publish()
	}
}

extension Defaults.RemoteServiceError {
	/// Whether the remote refused (trying again does not help), rather than failed to answer.
	var isRefusal: Bool {
		switch self {
		case .refused, .valueTooLarge: true
		case .unreachable, .invalidResponse, .compacted: false
		}
	}
}
