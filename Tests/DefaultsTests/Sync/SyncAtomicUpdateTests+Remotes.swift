import Foundation
import Synchronization

@testable import Defaults

// What the atomic update tests wrap a real etcd client in, to make a conflict, a lost answer or a local write happen
// at one chosen moment.

/// A count that any thread may add to.
final class Tally: Sendable {
	private let value = Atomic<Int>(0)

	func add() {
		value.add(1, ordering: .relaxed)
	}

	var count: Int {
		value.load(ordering: .relaxed)
	}
}

/// A real remote whose first transaction that `isChosen` goes through `firstTransaction` instead, which may act
/// before or after committing it (`commit`); everything else goes straight to the remote.
final class FirstTransactionRemote: RemoteWrapper {
	typealias Interception =
		@Sendable (
			_ remote: any Defaults.RemoteKeyValueService, _ commit: () async throws -> Int64?
		) async throws -> Int64?

	let wrapped: any Defaults.RemoteKeyValueService
	private let isChosen: @Sendable ([Defaults.RemoteWrite]) -> Bool
	private let interception: Interception
	private let intercepted = Atomic<Bool>(false)

	/// Whether the first chosen transaction has gone through the interception.
	var hasIntercepted: Bool { intercepted.load(ordering: .relaxed) }

	init(
		remote: any Defaults.RemoteKeyValueService,
		if isChosen: @escaping @Sendable ([Defaults.RemoteWrite]) -> Bool = { _ in true },
		firstTransaction interception: @escaping Interception
	) {
		self.wrapped = remote
		self.isChosen = isChosen
		self.interception = interception
	}

	/// Runs `hook` just before the first transaction.
	static func hooked(
		_ remote: any Defaults.RemoteKeyValueService, beforeFirstTransaction hook: @escaping @Sendable () -> Void
	) -> FirstTransactionRemote {
		FirstTransactionRemote(remote: remote) { _, commit in
			hook()
			return try await commit()
		}
	}

	/// Commits the first transaction and then loses its answer, as a leader killed right after committing.
	static func losingTheFirstAnswer(_ remote: any Defaults.RemoteKeyValueService) -> FirstTransactionRemote {
		FirstTransactionRemote(remote: remote) { _, commit in
			_ = try await commit()
			throw Defaults.RemoteServiceError.unreachable("the answer was lost")
		}
	}

	/// Lets "another machine" write `value` to `key` just before the first transaction that writes `key`.
	static func interfering(
		_ remote: any Defaults.RemoteKeyValueService, writing value: Data, to key: String
	) -> FirstTransactionRemote {
		FirstTransactionRemote(remote: remote, if: { writes in writes.contains { $0.key == key } }) { remote, commit in
			let current = try await remote.read(prefix: key).entries.first { $0.key == key }
			_ = try await remote.compareAndSwap(key: key, value: value, expectedModRevision: current?.modRevision ?? 0)
			return try await commit()
		}
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		guard isChosen(writes), !writes.contains(where: \.isEpoch), !intercepted.exchange(true, ordering: .relaxed)
		else {
			return try await wrapped.compareAndSwap(all: writes)
		}
		return try await interception(wrapped) { try await wrapped.compareAndSwap(all: writes) }
	}
}

/// A real remote that loses the answer to the first transaction without committing it, and commits it only just
/// before the second goes out: a leader that took the first in, fell silent, and committed it after the update had
/// read again and run its closure a second time.
final class LateFirstCommitRemote: RemoteWrapper {
	let wrapped: any Defaults.RemoteKeyValueService
	/// The first transaction while it waits to be committed; empty before it came and once committed.
	private let heldBack = LockedState<(seen: Bool, writes: [Defaults.RemoteWrite])>((false, []))

	init(remote: any Defaults.RemoteKeyValueService) {
		self.wrapped = remote
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		if writes.contains(where: \.isEpoch) {
			return try await wrapped.compareAndSwap(all: writes)
		}
		let late = heldBack.withLock { held -> [Defaults.RemoteWrite]? in
			guard held.seen else {
				held = (true, writes)
				return nil
			}
			defer { held.writes = [] }
			return held.writes
		}
		guard let late else {
			throw Defaults.RemoteServiceError.unreachable("the answer was lost")
		}
		if !late.isEmpty {
			_ = try await wrapped.compareAndSwap(all: late)
		}
		return try await wrapped.compareAndSwap(all: writes)
	}
}

/// A real remote whose watches fail at once, as while etcd has no leader: reads and transactions go through.
struct WatchlessRemote: RemoteWrapper {
	let wrapped: any Defaults.RemoteKeyValueService

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		AsyncThrowingStream { $0.finish(throwing: Defaults.RemoteServiceError.unreachable("no leader")) }
	}
}
