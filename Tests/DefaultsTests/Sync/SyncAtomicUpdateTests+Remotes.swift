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

/// A remote that runs `beforeFirstTransaction` once, just before the first transaction it is asked to commit.
final class HookedRemote: Defaults.RemoteKeyValueService {
	let remote: any Defaults.RemoteKeyValueService
	private let hook: @Sendable () -> Void
	private let ran = Atomic<Bool>(false)

	init(remote: any Defaults.RemoteKeyValueService, beforeFirstTransaction hook: @escaping @Sendable () -> Void) {
		self.remote = remote
		self.hook = hook
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		try await remote.read(prefix: prefix)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws
		-> Defaults.RemoteWriteResult
	{
		try await remote.compareAndSwap(key: key, value: value, expectedModRevision: expectedModRevision)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		if !ran.exchange(true, ordering: .relaxed) {
			hook()
		}
		return try await remote.compareAndSwap(all: writes)
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		remote.watch(prefix: prefix, fromRevision: revision)
	}
}

/// A remote that commits the first transaction and then loses its answer, as a leader killed right after committing.
final class AnswerLosingRemote: Defaults.RemoteKeyValueService {
	let remote: any Defaults.RemoteKeyValueService
	private let lost = Atomic<Bool>(false)

	init(remote: any Defaults.RemoteKeyValueService) {
		self.remote = remote
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		try await remote.read(prefix: prefix)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws
		-> Defaults.RemoteWriteResult
	{
		try await remote.compareAndSwap(key: key, value: value, expectedModRevision: expectedModRevision)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		let revision = try await remote.compareAndSwap(all: writes)
		if !lost.exchange(true, ordering: .relaxed) {
			throw Defaults.RemoteServiceError.unreachable("the answer was lost")
		}
		return revision
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		remote.watch(prefix: prefix, fromRevision: revision)
	}
}

/// A remote that, before the first transaction it is asked to commit, lets "another machine" write `value` to `key`.
final class InterferingRemote: Defaults.RemoteKeyValueService {
	let remote: any Defaults.RemoteKeyValueService
	let key: String
	let value: Data
	private let interfered = Atomic<Bool>(false)

	init(remote: any Defaults.RemoteKeyValueService, key: String, value: Data) {
		self.remote = remote
		self.key = key
		self.value = value
	}

	func read(prefix: String) async throws -> Defaults.RemoteSnapshot {
		try await remote.read(prefix: prefix)
	}

	func compareAndSwap(
		key: String, value: Data?, expectedModRevision: Int64
	) async throws -> Defaults.RemoteWriteResult {
		try await remote.compareAndSwap(key: key, value: value, expectedModRevision: expectedModRevision)
	}

	func compareAndSwap(all writes: [Defaults.RemoteWrite]) async throws -> Int64? {
		if writes.contains(where: { $0.key == key }), !interfered.exchange(true, ordering: .relaxed) {
			let current = try await remote.read(prefix: key).entries.first { $0.key == key }
			_ = try await remote.compareAndSwap(key: key, value: value, expectedModRevision: current?.modRevision ?? 0)
		}
		return try await remote.compareAndSwap(all: writes)
	}

	func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[Defaults.RemoteEvent], any Error> {
		remote.watch(prefix: prefix, fromRevision: revision)
	}
}
