#if canImport(Glibc)
	import Defaults
	@testable import DefaultsEtcd
	import Foundation
	import Testing

	/// The head of a reply to an HTTP/1.0 request, as the socket transport reads it.
	@Suite struct PlainHTTPReplyHeadTests {
		@Test func anIncompleteHeadIsNotYetParsed() throws {
			#expect(try ReplyHead(parsing: Data("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n".utf8)) == nil)
		}

		@Test func theStatusLengthAndBodyStartAreRead() throws {
			let bytes = Data("HTTP/1.0 400 Bad Request\r\ncontent-length: 12\r\nTrailer: X\r\n\r\n{\"code\": 3}\n".utf8)
			let head = try #require(try ReplyHead(parsing: bytes))
			#expect(head.status == 400)
			#expect(head.contentLength == 12)
			#expect(head.bodyStart == bytes.count - 12)
		}

		@Test func aChunkedReplyIsRefusedRatherThanReadWrongly() {
			#expect(throws: Defaults.RemoteServiceError.self) {
				try ReplyHead(parsing: Data("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
			}
		}

		@Test func somethingThatIsNotHTTPIsRefused() {
			#expect(throws: Defaults.RemoteServiceError.self) {
				try ReplyHead(parsing: Data("SSH-2.0-OpenSSH_9.2\r\n\r\n".utf8))
			}
		}

		@Test func aHeadThatNeverEndsIsRefusedAt64KiB() {
			#expect(throws: Defaults.RemoteServiceError.self) {
				try ReplyHead(parsing: Data(repeating: UInt8(ascii: "a"), count: 70_000))
			}
		}

		@Test func theRequestIsHTTP10WithItsLengthAndToken() {
			let request = GatewayRequest(
				url: URL(string: "http://127.0.0.1:2379/v3/kv/range")!, body: Data("{}".utf8), token: "t.1", timeout: 1)
			let text = String(decoding: PlainHTTPGatewayTransport.requestBytes(for: request), as: UTF8.self)
			#expect(
				text
					== "POST /v3/kv/range HTTP/1.0\r\nHost: 127.0.0.1:2379\r\nContent-Type: application/json\r\nContent-Length: 2\r\nAuthorization: t.1\r\n\r\n{}"
			)
		}
	}
#endif
