import Defaults
import Foundation

/// One streamed `/v3/watch` reply turned into events: etcd's gateway writes one JSON object per watch response, and
/// the reply stays open for as long as the watch runs. Fed by a ``GatewayTransport``, one call at a time.
final class EtcdWatch: GatewayStreamReceiver, @unchecked Sendable {
	private let continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation
	/// Why a watch stopped delivering events, other than a compacted history.
	enum Ending {
		/// The reply ended normally: etcd closed it.
		case closed
		/// The connection broke.
		case broken(any Error)
		/// etcd answered with an error instead of a stream (status and JSON body), or wrote one into the stream.
		case errorReply(status: Int, body: Data)
		/// etcd cancelled the watch, saying why (such as a permission it no longer grants).
		case cancelled(reason: String)
	}

	private let makeError: @Sendable (Ending) -> any Error
	/// The most one watch message may hold (64 MiB, as a reply to a request): a message that grows past it ends the
	/// watch with an error instead of growing without bound.
	let maximumMessageSize: Int
	static let defaultMaximumMessageSize = 64 << 20
	// Touched only by the transport's calls, which come one at a time.
	private var status = 0
	private var buffer = Data()
	/// How much of `buffer` the scanner has read: only the bytes after it are new.
	private var scanned = 0
	private var scanner = ObjectScanner()
	private var isFinished = false

	/// - Parameter makeError: The error the stream ends with, for each way it can end (the client uses it to fail
	///   over, or to forget a token etcd refused).
	init(
		continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation,
		maximumMessageSize: Int = defaultMaximumMessageSize, makeError: @escaping @Sendable (Ending) -> any Error
	) {
		self.continuation = continuation
		self.maximumMessageSize = maximumMessageSize
		self.makeError = makeError
	}

	func receive(status: Int) -> Bool {
		self.status = status
		return true
	}

	func receive(_ bytes: Data) {
		buffer.append(bytes)
		guard status == 200 else {
			// An error reply is one small JSON object, read whole when the reply ends.
			if buffer.count > 64 << 10 {
				buffer.removeLast(buffer.count - (64 << 10))
			}
			return
		}
		guard !isFinished else {
			return
		}
		var messageStart = 0
		buffer.withUnsafeBytes { bytes in
			for offset in scanned..<bytes.count where scanner.consume(bytes[offset]) {
				let message = Data(bytes[messageStart...offset])
				messageStart = offset + 1
				handle(message)
			}
		}
		if messageStart > 0 {
			buffer.removeSubrange(buffer.startIndex..<buffer.startIndex + messageStart)
		}
		scanned = buffer.count
		if buffer.count > maximumMessageSize {
			isFinished = true
			buffer = Data()
			continuation.finish(
				throwing: Defaults.RemoteServiceError.invalidResponse(
					"a watch message larger than \(maximumMessageSize) bytes"))
		}
	}

	func streamEnded(error: (any Error)?) {
		let ending: Ending =
			if let error {
				.broken(error)
			} else if status != 200 {
				.errorReply(status: status, body: buffer)
			} else {
				.closed
			}
		continuation.finish(throwing: makeError(ending))
	}

	private func handle(_ message: Data) {
		guard let object = (try? JSONSerialization.jsonObject(with: message)) as? [String: Any] else {
			return
		}
		if let error = object["error"] as? [String: Any] {
			// The gateway's error inside a stream: {"grpc_code", "http_code", "message", "http_status"}.
			let body =
				(try? JSONSerialization.data(withJSONObject: [
					"message": error["message"] ?? "", "code": error["grpc_code"] ?? 0,
				])) ?? Data()
			continuation.finish(
				throwing: makeError(.errorReply(status: (error["http_code"] as? NSNumber)?.intValue ?? 0, body: body)))
			return
		}
		guard let result = object["result"] as? [String: Any] else {
			return
		}
		let compacted = EtcdClient.int64(result["compact_revision"])
		if compacted > 0 {
			continuation.finish(throwing: Defaults.RemoteServiceError.compacted(compacted))
			return
		}
		if result["canceled"] as? Bool == true {
			continuation.finish(
				throwing: makeError(.cancelled(reason: result["cancel_reason"] as? String ?? "no reason given")))
			return
		}
		let events = (result["events"] as? [[String: Any]] ?? []).compactMap { event -> Defaults.RemoteEvent? in
			guard let kv = event["kv"] as? [String: Any] else {
				return nil
			}
			let entry: Defaults.RemoteEntry
			do {
				entry = try EtcdClient.entry(kv)
			} catch {
				// One event this client cannot read (a key that is not base64, a revision below 1) is skipped and
				// reported; the others still sync.
				Defaults.failureHandler(
					Defaults.Failure(
						keyName: "", reason: .decodingFailed,
						message: "A watch event from etcd could not be read and was skipped: \(error)."))
				return nil
			}
			if event["type"] as? String == "DELETE" {
				return .delete(key: entry.key, modRevision: entry.modRevision)
			}
			return .put(entry)
		}
		// The first reply says the watch was created: an empty batch tells the engine that etcd answered.
		if !events.isEmpty || result["created"] as? Bool == true {
			continuation.yield(events)
		}
	}

	/// Finds where JSON objects end in a stream of bytes, one byte at a time: each byte is looked at once, however
	/// the stream is cut into chunks (a rescan from the start of the object on every chunk made a long object cost
	/// quadratic time).
	struct ObjectScanner {
		private var depth = 0
		private var isInString = false
		private var isEscaped = false

		/// Reads `byte`; `true` when it closes a top-level object.
		mutating func consume(_ byte: UInt8) -> Bool {
			if isInString {
				if isEscaped {
					isEscaped = false
				} else if byte == UInt8(ascii: "\\") {
					isEscaped = true
				} else if byte == UInt8(ascii: "\"") {
					isInString = false
				}
				return false
			}
			switch byte {
			case UInt8(ascii: "\""): isInString = true
			case UInt8(ascii: "{"): depth += 1
			case UInt8(ascii: "}"):
				depth -= 1
				if depth <= 0 {
					depth = 0
					return true
				}
			default: break
			}
			return false
		}
	}
}
