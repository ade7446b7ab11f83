import Defaults
import Foundation
import Synchronization

#if canImport(Glibc)
	import Glibc
#elseif canImport(Darwin)
	import Darwin
#endif

/// A stand-in for etcd's gateway on a loopback port the kernel picks: it answers each HTTP request with what
/// `reply` returns for its path, then closes the connection, and keeps every request's head.
final class FakeGateway: Sendable {
	let port: Int
	private let listener: Int32
	private let log = HeadLog()
	/// The connections of requests held without an answer, closed by ``stop()``; `nil` once stopped.
	private let held = LockedState<[Int32]?>([])

	private final class HeadLog: Sendable {
		let heads = LockedState<[String]>([])
		let bodies = LockedState<[String]>([])
	}

	var endpoint: String { "http://127.0.0.1:\(port)" }

	/// The heads of the requests received so far.
	var requestHeads: [String] { log.heads.withLock { $0 } }
	/// The bodies of the requests received so far.
	var requestBodies: [String] { log.bodies.withLock { $0 } }

	convenience init(reply: @escaping @Sendable (_ path: String) -> String) throws {
		try self.init { path, _ in reply(path) }
	}

	/// A gateway that answers a request with what `reply` returns for its path and body, or, when it returns `nil`,
	/// never: the connection stays open, the request read and nothing sent, until ``stop()``.
	init(replyOrHold reply: @escaping @Sendable (_ path: String, _ body: String) -> String?) throws {
		let (descriptor, port) = try EtcdServer.loopbackSocket(listening: true)
		self.listener = descriptor
		self.port = port
		Thread.detachNewThread { [log, held] in
			while true {
				let connection = accept(descriptor, nil, nil)
				// Closed here, by the one thread that uses it, once `stop()` shut it down: closed by `stop()`, a
				// number the kernel gave to another descriptor meanwhile could be accepted on or closed here.
				guard connection >= 0 else {
					close(descriptor)
					return
				}
				let (head, body) = Self.readRequest(connection)
				log.heads.withLock { $0.append(head) }
				log.bodies.withLock { $0.append(body) }
				let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
				guard let answer = reply(path, body) else {
					let isHeld = held.withLock { held in
						held?.append(connection)
						return held != nil
					}
					if !isHeld {
						close(connection)
					}
					continue
				}
				let bytes = Array(answer.utf8)
				_ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, 0) }
				close(connection)
			}
		}
	}

	/// Stops listening, and closes the connections of requests held; the thread ends at its next accept and closes
	/// the listening socket. Once only: a second call (`deinit` after the test's) would act on descriptor numbers that
	/// may belong to another test by then.
	func stop() {
		let connections = held.withLock { held in
			defer { held = nil }
			return held
		}
		guard let connections else {
			return
		}
		shutdown(listener, Int32(SHUT_RDWR))
		for connection in connections {
			close(connection)
		}
	}

	deinit {
		stop()
	}

	/// Reads the head and the body its Content-Length announces.
	private static func readRequest(_ connection: Int32) -> (head: String, body: String) {
		var received: [UInt8] = []
		var buffer = [UInt8](repeating: 0, count: 4096)
		while true {
			let count = recv(connection, &buffer, buffer.count, 0)
			guard count > 0 else {
				break
			}
			received += buffer[0..<count]
			let text = String(decoding: received, as: UTF8.self)
			if let end = text.range(of: "\r\n\r\n") {
				let head = String(text[..<end.lowerBound])
				let length =
					head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
					.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
				if text.utf8.distance(from: end.upperBound.samePosition(in: text.utf8)!, to: text.utf8.endIndex)
					>= length
				{
					return (head, String(text[end.upperBound...]))
				}
			}
		}
		return (String(decoding: received, as: UTF8.self), "")
	}
}
