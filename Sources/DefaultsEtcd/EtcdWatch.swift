import Defaults
import Foundation

#if canImport(FoundationNetworking)
	import FoundationNetworking
#endif

/// One streamed `/v3/watch` response, read chunk by chunk with a data delegate: etcd's gateway writes one JSON object
/// per watch response, and the stream stays open for as long as the watch runs.
final class EtcdWatch: NSObject, URLSessionDataDelegate, @unchecked Sendable {
	private let continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation
	// Touched only on the session's serial delegate queue.
	private var buffer = Data()
	private var session: URLSession?
	private var task: URLSessionDataTask?
	private var onConnectionFailure: (@Sendable () -> Void)?
	private let lock = NSLock()

	init(continuation: AsyncThrowingStream<[Defaults.RemoteEvent], any Error>.Continuation) {
		self.continuation = continuation
	}

	func start(_ request: URLRequest, onConnectionFailure: @escaping @Sendable () -> Void) {
		let queue = OperationQueue()
		queue.maxConcurrentOperationCount = 1
		let session = URLSession(configuration: .ephemeral, delegate: self, delegateQueue: queue)
		let task = session.dataTask(with: request)
		lock.withLock {
			self.session = session
			self.task = task
			self.onConnectionFailure = onConnectionFailure
		}
		task.resume()
	}

	func cancel() {
		// Later, and only if the task has not completed by then: FoundationNetworking traps when a task is cancelled
		// while its completion is being delivered, and a watch is mostly ended because its connection just broke
		// (its task then completes by itself within moments).
		DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [self] in
			let (session, task) = lock.withLock {
				defer {
					self.session = nil
					self.task = nil
				}
				return (self.session, self.task)
			}
			guard let session, let task else {
				return
			}
			task.cancel()
			// Invalidating releases the session's strong reference to this delegate.
			session.finishTasksAndInvalidate()
		}
	}

	func urlSession(
		_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
		completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
	) {
		let status = (response as? HTTPURLResponse)?.statusCode ?? 0
		if status != 200 {
			continuation.finish(throwing: Defaults.RemoteServiceError.invalidResponse("watch: HTTP \(status)"))
			completionHandler(.cancel)
			return
		}
		completionHandler(.allow)
	}

	func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
		buffer.append(data)
		while let end = Self.endOfFirstObject(in: buffer) {
			let message = buffer[buffer.startIndex..<end]
			buffer = Data(buffer[end...])
			handle(Data(message))
		}
	}

	func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
		// Forgotten first: finishing the stream below cancels the watch, which must not touch a completed task.
		let (session, onConnectionFailure) = lock.withLock {
			defer {
				self.session = nil
				self.task = nil
			}
			return (self.session, self.onConnectionFailure)
		}
		if error != nil {
			onConnectionFailure?()
		}
		continuation.finish(
			throwing: Defaults.RemoteServiceError.unreachable(
				"the watch stream ended\(error.map { ": \($0.localizedDescription)" } ?? "")"))
		session?.finishTasksAndInvalidate()
	}

	private func handle(_ message: Data) {
		guard let object = (try? JSONSerialization.jsonObject(with: message)) as? [String: Any] else {
			return
		}
		if let error = object["error"] as? [String: Any] {
			continuation.finish(
				throwing: Defaults.RemoteServiceError.invalidResponse("watch: \(error["message"] ?? error)"))
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
				throwing: Defaults.RemoteServiceError.unreachable(
					"etcd cancelled the watch: \(result["cancel_reason"] ?? "no reason given")"))
			return
		}
		let events = (result["events"] as? [[String: Any]] ?? []).compactMap { event -> Defaults.RemoteEvent? in
			guard let kv = event["kv"] as? [String: Any], let entry = try? EtcdClient.entry(kv) else {
				return nil
			}
			if event["type"] as? String == "DELETE" {
				return .delete(key: entry.key, modRevision: entry.modRevision)
			}
			return .put(entry)
		}
		if !events.isEmpty {
			continuation.yield(events)
		}
	}

	/// Where the first complete JSON object in `data` ends, counting braces outside strings.
	static func endOfFirstObject(in data: Data) -> Data.Index? {
		var depth = 0
		var isInString = false
		var isEscaped = false
		for index in data.indices {
			let byte = data[index]
			if isInString {
				if isEscaped {
					isEscaped = false
				} else if byte == UInt8(ascii: "\\") {
					isEscaped = true
				} else if byte == UInt8(ascii: "\"") {
					isInString = false
				}
				continue
			}
			switch byte {
			case UInt8(ascii: "\""): isInString = true
			case UInt8(ascii: "{"): depth += 1
			case UInt8(ascii: "}"):
				depth -= 1
				if depth == 0 {
					return data.index(after: index)
				}
			default: break
			}
		}
		return nil
	}
}
