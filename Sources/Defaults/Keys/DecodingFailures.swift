import Foundation
import Synchronization

/// Reports each key whose stored value does not decode once, until the key is written again.
enum DecodingFailures {
	/// The keys of one store that failed, with the store held weakly: a record is the store's only while the store
	/// lives, so a new store that the allocator puts at a freed store's address starts with none.
	private struct Record {
		weak var store: (any Defaults.Store)?
		var keys: Set<String>

		func belongs(to store: any Defaults.Store) -> Bool {
			self.store === store
		}
	}

	private static let reported = LockedState<[ObjectIdentifier: Record]>([:])
	// Lets writes skip the lock while nothing has failed, which is nearly always.
	private static let count = Atomic<Int>(0)

	static func report(_ error: Defaults.DecodingError, in store: any Defaults.Store) {
		let isNew = reported.withLock { reported in
			let id = ObjectIdentifier(store)
			// Records of stores that are gone are dropped here, so the table holds only live stores' failures.
			reported = reported.filter { $0.value.store != nil }
			var record = reported[id].flatMap { $0.belongs(to: store) ? $0 : nil } ?? Record(store: store, keys: [])
			let inserted = record.keys.insert(error.keyName).inserted
			reported[id] = record
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
			let id = ObjectIdentifier(store)
			guard reported[id]?.belongs(to: store) == true else {
				return
			}
			reported[id]!.keys.remove(key)
			if reported[id]!.keys.isEmpty {
				reported[id] = nil
			}
			count.store(reported.count, ordering: .relaxed)
		}
	}
}
