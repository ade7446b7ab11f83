import Defaults
import Foundation

/// One POST to etcd's HTTP/JSON gateway.
struct GatewayRequest: Sendable {
	var url: URL
	var body: Data
	/// The `Authorization` header: etcd's token, when the client authenticates.
	var token: String?
	/// How long the whole exchange may take; `nil` for a stream that stays open until cancelled.
	var timeout: TimeInterval?
	/// Sends `Grpc-Metadata-Hasleader: true`: etcd then refuses a watch on a member that has no leader, and ends an
	/// open one when its member loses it, instead of keeping a watch that hears nothing.
	var requiresLeader = false

	/// The header that asks etcd for a member with a leader.
	static let requiresLeaderHeader = (name: "Grpc-Metadata-Hasleader", value: "true")
}

/// An answer of the gateway: its HTTP status and its body, whatever the status.
struct GatewayReply: Sendable {
	var status: Int
	var body: Data
}

/// Hears one streamed reply (a watch), in order, from one thread at a time.
protocol GatewayStreamReceiver: AnyObject, Sendable {
	/// The status line arrived. Return `false` to end the stream without reading its body.
	func receive(status: Int) -> Bool
	/// The next bytes of the body.
	func receive(_ bytes: Data)
	/// The stream ended: cancelled, closed by the server, or broken (`error`). Called once, last.
	func streamEnded(error: (any Error)?)
}

/// A stream being read; cancelling it ends it soon after, with ``GatewayStreamReceiver/streamEnded(error:)``.
protocol GatewayStream: Sendable {
	func cancel()
}

/// A request that never left this machine: the connection was refused or not accepted in time, the host's name did
/// not resolve, or the TLS handshake failed. The member cannot have applied it, so a write may go to the next member
/// without its outcome becoming unknown (`EtcdClient.call`).
struct GatewayRequestNotSent: Error, CustomStringConvertible {
	/// Why, in the words any other failure to reach the endpoint has.
	var error: Defaults.RemoteServiceError

	var description: String {
		error.description
	}
}

/// How the client reaches the gateway: plain HTTP/1.0 on a socket of our own, or URLSession.
///
/// ``send(_:)`` throws only when no answer came (the endpoint cannot be reached, or timed out); an HTTP error status
/// is an answer. It throws ``GatewayRequestNotSent`` when the request cannot have reached the endpoint, anything
/// else when it may have (sent, with no answer or an unreadable one).
protocol GatewayTransport: Sendable {
	func send(_ request: GatewayRequest) async throws -> GatewayReply
	func open(_ request: GatewayRequest, to receiver: any GatewayStreamReceiver) -> any GatewayStream
}

/// The transport for `endpoint` on this platform. Docs/Sync.md says why there are two: on Linux, plain-http endpoints
/// are spoken to in HTTP/1.0 on a socket, because FoundationNetworking traps on the trailer that etcd 3.4's gateway
/// ends every error reply with.
func gatewayTransport(for endpoint: URL) -> any GatewayTransport {
	#if canImport(Glibc)
		if endpoint.scheme == "http" {
			return PlainHTTPGatewayTransport()
		}
	#endif
	return URLSessionGatewayTransport()
}
