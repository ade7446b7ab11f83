import Foundation
import Synchronization

/// Reports each key whose stored value does not decode once, until the key is written again.
enum DecodingFailures {
	private struct ID: Hashable {
		let store: ObjectIdentifier
		let key: String
	}

	private static let reported = LockedState<Set<ID>>([])
	// Lets writes skip the lock while nothing has failed, which is nearly always.
	private static let count = Atomic<Int>(0)

	static func report(_ error: Defaults.DecodingError, in store: any Defaults.Store) {
		let isNew = reported.withLock { reported in
			let inserted = reported.insert(ID(store: ObjectIdentifier(store), key: error.keyName)).inserted
			count.store(reported.count, ordering: .relaxed)
			return inserted
		}
		guard isNew else {
			return
		}
		Defaults.report(
			Defaults.Failure(
				keyName: error.keyName, reason: .decodingFailed, message: error.description, decodingError: error))
	}

	static func forget(key: String, in store: any Defaults.Store) {
		guard count.load(ordering: .relaxed) > 0 else {
			return
		}
		reported.withLock { reported in
			reported.remove(ID(store: ObjectIdentifier(store), key: key))
			count.store(reported.count, ordering: .relaxed)
		}
	}
}
