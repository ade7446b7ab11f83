import Foundation

@testable import Defaults

/// A test remote around another, `wrapped`, that passes on every request it does not implement itself: a wrapper that
/// makes a fault happen at one chosen moment writes only the request that it changes.
protocol RemoteWrapper: Defaults.RemoteKeyValueService {
	var wrapped: any Defaults.RemoteKeyValueService { get }
}

extension Defaults.RemoteWrite {
	/// Whether this is the engine's write of the prefix's epoch key (bookkeeping, made at a full read): the test
	/// remotes that hold back, lose or count pushes let it by.
	var isEpoch: Bool {
		key.hasSuffix(SyncWorker.epochName)
	}
}

extension RemoteWrapper {
	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		try await wrapped.read(prefix: prefix)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		try await wrapped.compareAndSwap(key: key, value: value, expectedModRevision: expectedModRevision)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		try await wrapped.compareAndSwap(all: writes)
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		wrapped.watch(prefix: prefix, fromRevision: revision)
	}
}
