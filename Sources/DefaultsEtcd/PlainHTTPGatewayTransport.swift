#if canImport(Glibc)
	import Defaults
	import Foundation
	import Glibc
	import Synchronization

	/// etcd's gateway in HTTP/1.0 on a socket of our own: the transport for `http://` endpoints on Linux.
	///
	/// FoundationNetworking cannot carry these. etcd 3.4's gateway (grpc-gateway 1.9) ends every error reply with an
	/// HTTP trailer (`Grpc-Trailer-Content-Type`); FoundationNetworking reads a trailer line as the start of a new
	/// response header, forgets the response it had, and traps when the transfer completes ("Transfer completed, but
	/// there's no response"). A wrong password, an expired token or a value over etcd's request limit would end the
	/// app. A reply to an HTTP/1.0 request is never chunked, so it cannot carry a trailer: it ends when etcd closes the
	/// connection. One connection per request is cheap next to how seldom sync sends one.
	struct PlainHTTPGatewayTransport: GatewayTransport {
		/// The most a reply may hold (64 MiB): one announced larger is refused before its body is read, and one that
		/// grows past it without announcing its size is refused as soon as it does.
		static let maximumReplySize = 64 << 20
		/// How long a connection may take to be accepted.
		static let connectTimeout: Duration = .seconds(1)

		func send(_ request: GatewayRequest) async throws -> GatewayReply {
			try await withCheckedThrowingContinuation { continuation in
				DispatchQueue.global().async {
					continuation.resume(with: Result { try Self.exchange(request) })
				}
			}
		}

		func open(_ request: GatewayRequest, to receiver: any GatewayStreamReceiver) -> any GatewayStream {
			let stream = PlainHTTPStream()
			// A thread of its own: a watch blocks on its socket for as long as it runs.
			Thread.detachNewThread { stream.run(request, receiver: receiver) }
			return stream
		}

		static func exchange(_ request: GatewayRequest) throws -> GatewayReply {
			let deadline = request.timeout.map { ContinuousClock.now + .seconds($0) }
			let (connection, head, firstBytes) = try openReply(request, deadline: deadline, isCancelled: { false })
			defer { connection.close() }
			if let length = head.contentLength, length > maximumReplySize {
				throw Defaults.RemoteServiceError.invalidResponse(
					"\(request.url.absoluteString): the reply announces \(length) bytes, more than the \(maximumReplySize) accepted"
				)
			}
			var body = firstBytes
			while head.contentLength.map({ body.count < $0 }) ?? true {
				guard let bytes = try connection.read(deadline: deadline, isCancelled: { false }) else {
					break
				}
				body.append(bytes)
				guard body.count <= maximumReplySize else {
					throw Defaults.RemoteServiceError.invalidResponse(
						"\(request.url.absoluteString): the reply is larger than \(maximumReplySize) bytes")
				}
			}
			if let length = head.contentLength {
				guard body.count >= length else {
					throw Defaults.RemoteServiceError.unreachable(
						"\(request.url.absoluteString): the connection closed after \(body.count) of \(length) bytes")
				}
				body = body.prefix(length)
			}
			return GatewayReply(status: head.status, body: body)
		}

		/// Connects, sends `request` and reads until the reply's head is in, all before `deadline`: what a request
		/// and a stream share. The connection is the caller's to close; on a throw it is closed already.
		///
		/// - Returns: The connection, the head, and the bytes of the body that came with it.
		static func openReply(
			_ request: GatewayRequest, deadline: ContinuousClock.Instant?, isCancelled: () -> Bool
		) throws -> (connection: SocketConnection, head: ReplyHead, body: Data) {
			// A member that is up accepts a connection in milliseconds: one that does not within a second is passed
			// over for the next, so that a client whose first endpoint is cut off reconnects within a couple of
			// seconds rather than a request timeout per endpoint.
			let connectDeadline = min(deadline ?? .now + connectTimeout, .now + connectTimeout)
			let connection: SocketConnection
			do {
				connection = try SocketConnection(to: request.url, deadline: connectDeadline)
			} catch let error as Defaults.RemoteServiceError {
				// No connection: not a byte of the request left.
				throw GatewayRequestNotSent(error: error)
			}
			do {
				try connection.write(requestBytes(for: request), deadline: deadline)
				var received = Data()
				while true {
					guard let bytes = try connection.read(deadline: deadline, isCancelled: isCancelled) else {
						throw Defaults.RemoteServiceError.unreachable(
							"\(request.url.absoluteString): the connection closed before a reply")
					}
					received.append(bytes)
					if let head = try ReplyHead(parsing: received) {
						return (connection, head, Data(received.dropFirst(head.bodyStart)))
					}
				}
			} catch {
				connection.close()
				throw error
			}
		}

		static func requestBytes(for request: GatewayRequest) -> Data {
			let url = request.url
			let host = url.host ?? "localhost"
			let hostField = (host.contains(":") ? "[\(host)]" : host) + (url.port.map { ":\($0)" } ?? "")
			// As sent: percent-encoded, with any query.
			let path = url.path(percentEncoded: true) + (url.query(percentEncoded: true).map { "?\($0)" } ?? "")
			var head =
				"POST \(path.isEmpty ? "/" : path) HTTP/1.0\r\nHost: \(hostField)\r\n"
				+ "Content-Type: application/json\r\nContent-Length: \(request.body.count)\r\n"
			if let token = request.token {
				head += "Authorization: \(token)\r\n"
			}
			if request.requiresLeader {
				let header = GatewayRequest.requiresLeaderHeader
				head += "\(header.name): \(header.value)\r\n"
			}
			head += "\r\n"
			return Data(head.utf8) + request.body
		}
	}

	/// The status line and headers of a reply.
	struct ReplyHead: Equatable {
		var status: Int
		var contentLength: Int?
		/// Where the body starts in the bytes received.
		var bodyStart: Int

		/// The head at the start of `bytes`, `nil` while it has not all arrived.
		///
		/// - Throws: ``Defaults/RemoteServiceError/invalidResponse(_:)`` for a head that is not HTTP, too long, or
		///   announces a chunked body (which HTTP/1.0 forbids, and which would be read wrongly).
		init?(parsing bytes: Data) throws {
			let separator = Data("\r\n\r\n".utf8)
			guard let end = bytes.range(of: separator) else {
				guard bytes.count < 64 << 10 else {
					throw Defaults.RemoteServiceError.invalidResponse("a reply head longer than 64 KiB")
				}
				return nil
			}
			let text = String(decoding: bytes[bytes.startIndex..<end.lowerBound], as: UTF8.self)
			let lines = text.components(separatedBy: "\r\n")
			let statusParts = lines[0].split(separator: " ", maxSplits: 2)
			guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/1."), let status = Int(statusParts[1]),
				(100...599).contains(status)
			else {
				throw Defaults.RemoteServiceError.invalidResponse("not an HTTP reply: \(lines[0].prefix(80))")
			}
			var contentLength: Int?
			for line in lines.dropFirst() {
				let parts = line.split(separator: ":", maxSplits: 1)
				guard parts.count == 2 else {
					continue
				}
				let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
				let value = parts[1].trimmingCharacters(in: .whitespaces)
				if name == "content-length" {
					guard let length = Int(value), length >= 0 else {
						throw Defaults.RemoteServiceError.invalidResponse("a bad Content-Length: \(value.prefix(40))")
					}
					contentLength = length
				} else if name == "transfer-encoding", value.lowercased() != "identity" {
					throw Defaults.RemoteServiceError.invalidResponse("a \(value) reply to an HTTP/1.0 request")
				}
			}
			self.status = status
			self.contentLength = contentLength
			self.bodyStart = end.upperBound - bytes.startIndex
		}
	}

	/// A watch read on its own thread until it is cancelled or its connection ends.
	final class PlainHTTPStream: GatewayStream {
		private let isCancelled = Atomic<Bool>(false)

		func cancel() {
			isCancelled.store(true, ordering: .relaxed)
		}

		func run(_ request: GatewayRequest, receiver: any GatewayStreamReceiver) {
			let cancelled = { self.isCancelled.load(ordering: .relaxed) }
			do {
				// The timeout bounds the connection and the reply's head; the body flows for as long as the watch runs.
				let deadline = request.timeout.map { ContinuousClock.now + .seconds($0) }
				let (connection, head, firstBytes) = try PlainHTTPGatewayTransport.openReply(
					request, deadline: deadline, isCancelled: cancelled)
				defer { connection.close() }
				guard receiver.receive(status: head.status) else {
					receiver.streamEnded(error: nil)
					return
				}
				if !firstBytes.isEmpty {
					receiver.receive(firstBytes)
				}
				while let bytes = try connection.read(deadline: nil, isCancelled: cancelled) {
					receiver.receive(bytes)
				}
				receiver.streamEnded(error: nil)
			} catch is CancellationError {
				receiver.streamEnded(error: nil)
			} catch {
				receiver.streamEnded(error: (error as? GatewayRequestNotSent)?.error ?? error)
			}
		}
	}

	/// A connected TCP socket with deadlines on every wait.
	final class SocketConnection {
		private let descriptor: Int32

		/// Connects to the host and port of `url`, trying each address the name resolves to.
		init(to url: URL, deadline: ContinuousClock.Instant?) throws {
			let host = url.host ?? "localhost"
			let port = url.port ?? 80
			var hints = addrinfo()
			hints.ai_family = AF_UNSPEC
			hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
			var addresses: UnsafeMutablePointer<addrinfo>?
			let resolved = getaddrinfo(host, String(port), &hints, &addresses)
			guard resolved == 0, let addresses else {
				throw Defaults.RemoteServiceError.unreachable(
					"\(host): \(String(cString: gai_strerror(resolved)))")
			}
			defer { freeaddrinfo(addresses) }
			var failure = "no address"
			var next: UnsafeMutablePointer<addrinfo>? = addresses
			while let address = next?.pointee {
				next = address.ai_next
				let candidate = socket(
					address.ai_family,
					address.ai_socktype | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
					address.ai_protocol)
				guard candidate >= 0 else {
					failure = Self.describeErrno()
					continue
				}
				var code: Int32 = 0
				if Glibc.connect(candidate, address.ai_addr, address.ai_addrlen) != 0 {
					code = errno
					if code == EINPROGRESS {
						let isReady =
							(try? Self.wait(candidate, for: Int16(POLLOUT), deadline: deadline, isCancelled: { false }))
							?? false
						code = isReady ? Self.pendingError(candidate) : ETIMEDOUT
					}
				}
				if code == 0 {
					Self.keepAlive(candidate)
					descriptor = candidate
					return
				}
				failure = Self.describeErrno(code)
				Glibc.close(candidate)
			}
			throw Defaults.RemoteServiceError.unreachable("\(host):\(port): \(failure)")
		}

		func close() {
			Glibc.close(descriptor)
		}

		func write(_ data: Data, deadline: ContinuousClock.Instant?) throws {
			try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
				guard let base = raw.baseAddress else {
					return
				}
				var offset = 0
				while offset < raw.count {
					let sent = Glibc.send(descriptor, base + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
					if sent > 0 {
						offset += sent
					} else if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
						guard try Self.wait(descriptor, for: Int16(POLLOUT), deadline: deadline, isCancelled: { false })
						else {
							throw Defaults.RemoteServiceError.unreachable("timed out sending the request")
						}
					} else {
						throw Defaults.RemoteServiceError.unreachable(Self.describeErrno())
					}
				}
			}
		}

		/// The next bytes; `nil` when the other side closed the connection.
		///
		/// - Throws: ``Defaults/RemoteServiceError/unreachable(_:)`` at the deadline or on a broken connection,
		///   `CancellationError` once `isCancelled` says so.
		func read(deadline: ContinuousClock.Instant?, isCancelled: () -> Bool) throws -> Data? {
			var buffer = [UInt8](repeating: 0, count: 64 << 10)
			while true {
				let count = recv(descriptor, &buffer, buffer.count, 0)
				if count > 0 {
					return Data(buffer[0..<count])
				}
				if count == 0 {
					return nil
				}
				guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else {
					throw Defaults.RemoteServiceError.unreachable(Self.describeErrno())
				}
				guard try Self.wait(descriptor, for: Int16(POLLIN), deadline: deadline, isCancelled: isCancelled) else {
					throw Defaults.RemoteServiceError.unreachable("timed out waiting for the reply")
				}
			}
		}

		/// Waits until the socket is ready, in slices of at most 250 ms so that cancellation is noticed.
		///
		/// - Returns: `false` at the deadline.
		private static func wait(
			_ descriptor: Int32, for events: Int16, deadline: ContinuousClock.Instant?, isCancelled: () -> Bool
		) throws -> Bool {
			while true {
				if isCancelled() {
					throw CancellationError()
				}
				var slice = 250
				if let deadline {
					let remaining = deadline - .now
					guard remaining > .zero else {
						return false
					}
					let (seconds, attoseconds) = remaining.components
					slice = min(slice, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000) + 1)
				}
				var entry = pollfd(fd: descriptor, events: events, revents: 0)
				let ready = poll(&entry, 1, Int32(slice))
				if ready > 0 {
					return true
				}
				if ready < 0, errno != EINTR {
					throw Defaults.RemoteServiceError.unreachable(describeErrno())
				}
			}
		}

		private static func pendingError(_ descriptor: Int32) -> Int32 {
			var value: Int32 = 0
			var length = socklen_t(MemoryLayout<Int32>.size)
			getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &value, &length)
			return value
		}

		/// Probes an idle connection, so that a watch notices within a minute that the other machine is gone.
		private static func keepAlive(_ descriptor: Int32) {
			for (level, option, value) in [
				(SOL_SOCKET, SO_KEEPALIVE, 1), (Int32(IPPROTO_TCP), TCP_KEEPIDLE, 30),
				(Int32(IPPROTO_TCP), TCP_KEEPINTVL, 10), (Int32(IPPROTO_TCP), TCP_KEEPCNT, 3),
			] {
				var setting = Int32(value)
				setsockopt(descriptor, level, option, &setting, socklen_t(MemoryLayout<Int32>.size))
			}
		}

		private static func describeErrno(_ code: Int32 = errno) -> String {
			String(cString: strerror(code))
		}
	}
#endif
