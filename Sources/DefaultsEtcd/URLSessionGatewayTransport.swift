import Defaults
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
	import FoundationNetworking
#endif

/// etcd's gateway through `URLSession`: every endpoint on Apple platforms, https endpoints on Linux.
///
/// On Linux, FoundationNetworking traps on the HTTP trailer that etcd's gateway before 3.5 ends every error reply
/// with (see `PlainHTTPGatewayTransport`, which http endpoints use instead). etcd 3.5's gateway (grpc-gateway 1.16)
/// sends trailers only to clients that ask for them, so on Linux this transport first asks the endpoint's version
/// (`/version`, which is not the gateway and has no trailer) and refuses an etcd older than 3.5 with an error that says
/// so, rather than risk ending the app at its first error reply.
final class URLSessionGatewayTransport: GatewayTransport {
	private let endpoint: URL
	private let session: URLSession
	#if canImport(FoundationNetworking)
		private let isVersionChecked = Atomic<Bool>(false)
	#endif

	init(endpoint: URL) {
		self.endpoint = endpoint
		session = URLSession(configuration: .ephemeral)
	}

	deinit {
		session.invalidateAndCancel()
	}

	func send(_ request: GatewayRequest) async throws -> GatewayReply {
		try await checkVersion()
		let (data, response) = try await Self.load(urlRequest(for: request), with: session)
		return GatewayReply(status: (response as? HTTPURLResponse)?.statusCode ?? 0, body: data)
	}

	func open(_ request: GatewayRequest, to receiver: any GatewayStreamReceiver) -> any GatewayStream {
		let stream = URLSessionStream(receiver: receiver)
		Task {
			do {
				try await checkVersion()
				var urlRequest = urlRequest(for: request)
				// A watch is idle for as long as nothing changes; etcd's progress notifications keep it from timing out.
				urlRequest.timeoutInterval = 24 * 60 * 60
				stream.start(urlRequest)
			} catch {
				receiver.streamEnded(error: error)
			}
		}
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
		if let timeout = request.timeout {
			urlRequest.timeoutInterval = timeout
		}
		return urlRequest
	}

	/// Refuses, on Linux, an etcd whose gateway answers errors with trailers. Elsewhere it does nothing.
	private func checkVersion() async throws {
		#if canImport(FoundationNetworking)
			guard !isVersionChecked.load(ordering: .relaxed) else {
				return
			}
			var request = URLRequest(url: endpoint.appending(path: "version"))
			request.timeoutInterval = 5
			let (data, _) = try await Self.load(request, with: session)
			let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
			let version = object?["etcdserver"] as? String ?? "unknown"
			let parts = version.split(separator: ".").compactMap { Int($0) }
			guard parts.count >= 2, (parts[0], parts[1]) >= (3, 5) else {
				throw Defaults.RemoteServiceError.refused(
					"\(endpoint.absoluteString) runs etcd \(version): on Linux, https endpoints need etcd 3.5 or later, whose gateway does not end error replies with an HTTP trailer (FoundationNetworking cannot read one); use etcd 3.5 or later, or an http endpoint on a trusted network"
				)
			}
			isVersionChecked.store(true, ordering: .relaxed)
		#endif
	}

	/// A request through a completion handler: FoundationNetworking's `data(for:)` can trap when a connection
	/// fails while others are in flight.
	private static func load(_ request: URLRequest, with session: URLSession) async throws -> (Data, URLResponse) {
		try await withCheckedThrowingContinuation { continuation in
			session.dataTask(with: request) { data, response, error in
				if let data, let response {
					continuation.resume(returning: (data, response))
				} else {
					continuation.resume(
						throwing: Defaults.RemoteServiceError.unreachable(
							"\(request.url?.absoluteString ?? ""): \((error ?? URLError(.badServerResponse)).localizedDescription)"
						))
				}
			}.resume()
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
