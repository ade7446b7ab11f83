import Foundation

extension Defaults {
	/// A remote, ordered key-value service that synced settings travel through: etcd (see the `DefaultsEtcd`
	/// library) is the one that ships; tests and other engines conform too.
	///
	/// Keys are full remote key names (prefix included); values are opaque bytes. Every change the service accepts
	/// gets a revision, increasing across the whole service, and each key remembers the revision that last modified
	/// it (its *mod revision*; 0 when the key does not exist). Those revisions are what the sync engine uses to
	/// resume watching and to decide conflicts.
	///
	/// An empty value is a value like any other: the key exists, with a mod revision of its own. The engine writes one
	/// for a removal (a *tombstone*), so that no compare-and-swap ever has to name 0 for a key that existed; a service
	/// that deleted the key instead would let a push sent again after a lost reply overwrite a removal made since.
	package protocol RemoteKeyValueService: Sendable {
		/// Every key under `prefix`, with the service's revision at the time of the read.
		func read(prefix: String) async throws -> RemoteSnapshot

		/// Writes `value` for `key` (deletes the key for `nil`) only if the key's mod revision is still
		/// `expectedModRevision` (0: only if the key does not exist).
		func compareAndSwap(key: String, value: Data?, expectedModRevision: Int64) async throws -> RemoteWriteResult

		/// Applies all of `writes` at one revision if every key's mod revision is still the expected one, and none of
		/// them otherwise.
		///
		/// - Returns: the revision of the write, or `nil` when a comparison failed and nothing was written.
		func compareAndSwap(all writes: [RemoteWrite]) async throws -> Int64?

		/// The changes under `prefix` from `revision` on, as they happen; the stream ends with an error when the
		/// connection is lost, or with ``RemoteServiceError/compacted(_:)`` when that revision is no longer kept.
		///
		/// Yield an empty batch once the watch is established: the engine counts as connected when the remote first
		/// answers, and a quiet prefix would otherwise show it disconnected until its first change or push.
		func watch(prefix: String, fromRevision revision: Int64) -> AsyncThrowingStream<[RemoteEvent], any Error>
	}

	/// A key and its value as a `RemoteKeyValueService` holds it.
	package struct RemoteEntry: Sendable, Equatable {
		/// The full remote key.
		package var key: String
		/// The value's bytes.
		package var value: Data
		/// The revision that last modified the key.
		package var modRevision: Int64

		/// Creates an entry.
		package init(key: String, value: Data, modRevision: Int64) {
			self.key = key
			self.value = value
			self.modRevision = modRevision
		}
	}

	/// One write of a ``Defaults/RemoteKeyValueService/compareAndSwap(all:)``.
	package struct RemoteWrite: Sendable, Equatable {
		/// The full remote key.
		package var key: String
		/// The bytes to write; `nil` deletes the key.
		package var value: Data?
		/// The mod revision the key must still have (0: it must not exist).
		package var expectedModRevision: Int64
		/// Whether the key is only compared, not written: the transaction needs it unchanged (an atomic update read
		/// it) but does not change it. `value` then holds the key's current bytes, so that a service that writes it
		/// anyway stores what was there.
		package var isComparedOnly = false

		package init(key: String, value: Data?, expectedModRevision: Int64) {
			self.key = key
			self.value = value
			self.expectedModRevision = expectedModRevision
		}

		/// A key the transaction compares but leaves as it is: `value` is its current bytes.
		package static func comparison(key: String, value: Data?, expectedModRevision: Int64) -> RemoteWrite {
			var write = RemoteWrite(key: key, value: value, expectedModRevision: expectedModRevision)
			write.isComparedOnly = true
			return write
		}
	}

	/// The keys under a prefix, read at one revision.
	package struct RemoteSnapshot: Sendable, Equatable {
		/// The entries found.
		package var entries: [RemoteEntry]
		/// The service's revision at the time of the read: watching from `revision + 1` misses nothing.
		package var revision: Int64
		/// Entries the service sent in a form that could not be read (a key that is not base64, a revision below 1),
		/// each described: the engine reports them and syncs the other keys.
		package var skipped: [String]

		/// Creates a snapshot.
		package init(entries: [RemoteEntry], revision: Int64, skipped: [String] = []) {
			self.entries = entries
			self.revision = revision
			self.skipped = skipped
		}
	}

	/// One change a watch reports.
	package enum RemoteEvent: Sendable, Equatable {
		/// `entry` was written.
		case put(RemoteEntry)
		/// `key` was deleted at `modRevision`.
		case delete(key: String, modRevision: Int64)
	}

	/// What a compare-and-swap did.
	package enum RemoteWriteResult: Sendable, Equatable {
		/// The write was applied at `revision`.
		case written(revision: Int64)
		/// The key had changed; `current` is what it holds now (`nil`: it does not exist).
		case conflict(current: RemoteEntry?)
	}

	/// Errors a `RemoteKeyValueService` throws that the sync engine treats specially.
	package enum RemoteServiceError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
		/// The revision a watch asked for was compacted away; everything newer than `compactRevision` is kept.
		case compacted(Int64)
		/// No endpoint could be reached, or all answered with errors.
		case unreachable(String)
		/// An endpoint answered with something that is not what the protocol says.
		case invalidResponse(String)
		/// The remote understood the request and will not do it: wrong credentials, no permission for the prefix, a
		/// value over its size limit, or a server this client cannot talk to safely. Retrying the same request does not
		/// help; the message says what to change.
		case refused(String)
		/// The remote will not store a value this large. Only this one write failed; the others can go on.
		case valueTooLarge(String)

		/// A sentence describing the error.
		package var description: String {
			switch self {
			case .compacted(let revision): "the watched history was compacted up to revision \(revision)"
			case .unreachable(let reason): "the remote cannot be reached: \(reason)"
			case .invalidResponse(let reason): "the remote answered unexpectedly: \(reason)"
			case .refused(let reason): "the remote refused the request: \(reason)"
			case .valueTooLarge(let reason): "the remote will not store a value this large: \(reason)"
			}
		}

		/// ``description`` as a sentence of its own, for `localizedDescription`: capitalised, with one full stop.
		package var errorDescription: String? {
			let text = description.trimmingCharacters(in: .whitespacesAndNewlines)
			let sentence = text.prefix(1).uppercased() + text.dropFirst()
			return sentence.last.map { ".!?".contains($0) } == true ? sentence : sentence + "."
		}
	}
}
