import Defaults
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
	import FoundationNetworking
#endif

/// etcd's gateway through `URLSession`: every endpoint on Apple platforms, https endpoints on Linux.
///
/// On Linux, FoundationNetworking traps on an HTTP trailer, which etcd 3.4's gateway ends its error replies with on
/// plain http (see `PlainHTTPGatewayTransport`, which http endpoints use instead). Over TLS the same gateway answers
/// errors with a `Content-Length` and no trailer (checked with curl over HTTP/1.1 and HTTP/2 for a missing key, a
/// bad token and a wrong password), and etcd 3.5's gateway sends trailers only to clients that ask for them, so
/// https endpoints are safe here.
final class URLSessionGatewayTransport: GatewayTransport {
	private let session: URLSession

	init() {
		session = URLSession(configuration: .ephemeral)
	}

	deinit {
		session.invalidateAndCancel()
	}

	func send(_ request: GatewayRequest) async throws -> GatewayReply {
		let (data, response) = try await Self.load(urlRequest(for: request), with: session)
		return GatewayReply(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: data)
	}

	func open(_ request: GatewayRequest, to receiver: any GatewayStreamReceiver) -> any GatewayStream {
		let stream = URLSessionStream(receiver: receiver)
		var urlRequest = urlRequest(for: request)
		// A watch is idle for as long as nothing changes; etcd's progress notifications keep it from timing out.
		urlRequest.timeoutInterval = 24 * 60 * 60
		stream.start(urlRequest)
		return stream
	}

	private func urlRequest(for request: GatewayRequest) -> URLRequest {
		var urlRequest = URLRequest(url: request.url)
		urlRequest.httpMethod = "POST"
		urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
		urlRequest.httpBody = request.body
		if let token = request.token {
			urlRequest.setValue(token, forHTTPHeaderField: "Authorization")
		}
		if request.requiresLeader {
			let header = GatewayRequest.requiresLeaderHeader
			urlRequest.setValue(header.value, forHTTPHeaderField: header.name)
		}
		if let timeout = request.timeout {
			urlRequest.timeoutInterval = timeout
		}
		return urlRequest
	}

	/// Failures before the request is sent: no connection, or no TLS session to send it in, when the task sent none
	/// of the body. A code alone does not say so: on a reused connection, libcurl may write the whole request, see
	/// the connection die, and connect again, and a refusal of that connection reports "cannot connect" for a request
	/// the member may have applied.
	private static let notSentCodes: Set<URLError.Code> = [
		.cannotFindHost, .dnsLookupFailed, .cannotConnectToHost, .notConnectedToInternet, .secureConnectionFailed,
		.serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
		.serverCertificateNotYetValid, .clientCertificateRejected, .clientCertificateRequired,
	]

	/// A request through a completion handler: FoundationNetworking's `data(for:)` can trap when a connection
	/// fails while others are in flight.
	private static func load(_ request: URLRequest, with session: URLSession) async throws -> (Data, URLResponse) {
		// FoundationNetworking counts the bytes sent only for a task with a delegate, not for one with a completion
		// handler, so that a count of 0 proves nothing there: a write (a transaction) is never called not sent, its
		// outcome unknown when the next member refuses it. Reads, whose outcome does not matter, keep the codes.
		let isWrite = request.url?.path.hasSuffix("/v3/kv/txn") ?? true
		return try await withCheckedThrowingContinuation { continuation in
			let task = Mutex<URLSessionDataTask?>(nil)
			let started = session.dataTask(with: request) { data, response, error in
				if let data, let response {
					continuation.resume(returning: (data, response))
				} else {
					let failure = Defaults.RemoteServiceError.unreachable(
						"\(request.url?.absoluteString ?? ""): \((error ?? URLError(.badServerResponse)).localizedDescription)"
					)
					let isNotSent =
						!isWrite && ((error as? URLError).map { notSentCodes.contains($0.code) } ?? false)
						&& task.withLock { $0?.countOfBytesSent ?? 1 } == 0
					continuation.resume(throwing: isNotSent ? GatewayRequestNotSent(error: failure) : failure)
				}
			}
			task.withLock { $0 = started }
			started.resume()
		}
	}
}

/// One streamed reply read chunk by chunk through a data delegate, handed to a ``GatewayStreamReceiver``.
final class URLSessionStream: NSObject, URLSessionDataDelegate, GatewayStream, @unchecked Sendable {
	private let receiver: any GatewayStreamReceiver
	private let lock = NSLock()
	private var session: URLSession?
	private var task: URLSessionDataTask?
	private var isCancelled = false

	init(receiver: any GatewayStreamReceiver) {
		self.receiver = receiver
	}

	func start(_ request: URLRequest) {
		let queue = OperationQueue()
		queue.maxConcurrentOperationCount = 1
		let session = URLSession(configuration: .ephemeral, delegate: self, delegateQueue: queue)
		let task = session.dataTask(with: request)
		let isCancelled = lock.withLock {
			self.session = session
			self.task = task
			return self.isCancelled
		}
		if isCancelled {
			session.invalidateAndCancel()
			receiver.streamEnded(error: nil)
			return
		}
		task.resume()
	}

	func cancel() {
		lock.withLock { isCancelled = true }
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
		completionHandler(receiver.receive(status: status) ? .allow : .cancel)
	}

	func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
		receiver.receive(data)
	}

	func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
		// Forgotten first: ending the stream cancels it, which must not touch a completed task.
		let (session, isCancelled) = lock.withLock {
			defer {
				self.session = nil
				self.task = nil
			}
			return (self.session, self.isCancelled)
		}
		receiver.streamEnded(
			error: isCancelled
				? nil : error.map { Defaults.RemoteServiceError.unreachable($0.localizedDescription) })
		session?.finishTasksAndInvalidate()
	}
}
