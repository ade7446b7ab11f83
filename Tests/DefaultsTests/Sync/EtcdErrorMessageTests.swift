import Foundation
import Testing

@testable import Defaults
@testable import DefaultsEtcd

/// What a newcomer reads when the client is set up wrong or the other end is not etcd's gateway: a sentence that
/// says what is wrong and what was expected, once, without a stray newline or a doubled full stop.
@Suite(.scaledTimeLimit(minutes: 1)) struct EtcdErrorMessageTests {
	static func reply(_ status: String, _ body: String) -> String {
		"HTTP/1.0 \(status)\r\nContent-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
	}

	/// The message as the engine's failure puts it in its sentence ("Syncing '…' stopped: <error>. Changes …").
	static func readError(replying reply: String) async throws -> String {
		let gateway = try FakeGateway { _ in reply }
		defer { gateway.stop() }
		let client = try EtcdClient(endpoints: [gateway.endpoint], requestTimeout: 2)
		do {
			_ = try await client.read(prefix: "/t/")
		} catch {
			return "\(error)."
		}
		Issue.record("the read did not fail")
		return ""
	}

	@Test func anEndpointWithoutASchemeSaysSoAndHowToWriteIt() throws {
		let error = #expect(throws: EtcdClient.ConfigurationError.self) {
			try EtcdClient(endpoints: ["127.0.0.1:23379"])
		}
		let description = try #require(error).description
		#expect(description.contains("no scheme"), "\(description)")
		#expect(description.contains("\"http://127.0.0.1:23379\""), "\(description)")
		#expect(try #require(error).localizedDescription == description, "not Foundation's generic sentence")
		let none = #expect(throws: EtcdClient.ConfigurationError.self) { try EtcdClient(endpoints: []) }
		#expect(none?.localizedDescription.contains("No etcd endpoint was given") == true)
		let other = #expect(throws: EtcdClient.ConfigurationError.self) { try EtcdClient(endpoints: ["ftp://h:1"]) }
		#expect(other?.description.contains("not an http:// or https:// URL") == true)
	}

	/// The remote's errors were Foundation's generic "The operation could not be completed" in `localizedDescription`.
	@Test func aRemoteErrorsLocalizedDescriptionIsItsOwnSentence() async throws {
		let gateway = try FakeGateway { _ in Self.reply("404 Not Found", "404 page not found\n") }
		defer { gateway.stop() }
		let client = try EtcdClient(endpoints: [gateway.endpoint], requestTimeout: 2)
		let error = await #expect(throws: Defaults.RemoteServiceError.self) { _ = try await client.read(prefix: "/t/") }
		let thrown = try #require(error)
		#expect(thrown.localizedDescription.hasPrefix("The remote "), "\(thrown.localizedDescription)")
		#expect(thrown.localizedDescription.contains("404 page not found"), "\(thrown.localizedDescription)")
		#expect(thrown.localizedDescription.dropFirst() == "\(thrown).".dropFirst())
		#expect(
			Defaults.RemoteServiceError.compacted(7).localizedDescription
				== "The watched history was compacted up to revision 7.")
		#expect(
			Defaults.RemoteServiceError.refused("etcdserver: permission denied").localizedDescription
				== "The remote refused the request: etcdserver: permission denied.")
		#expect(Defaults.RemoteServiceError.unreachable("done.").localizedDescription.hasSuffix("done."))
	}

	/// A server that is not etcd's gateway (here Go's plain 404 page) was "HTTP 404 404 page not found\n.".
	@Test func aReplyThatIsNotEtcdsErrorIsQuotedOnOneLineWithWhatWasExpected() async throws {
		let message = try await Self.readError(replying: Self.reply("404 Not Found", "404 page not found\n"))
		#expect(
			message.contains("HTTP 404: \"404 page not found\", where etcd's v3 JSON gateway was expected"),
			"\(message)")
		#expect(!message.contains("\n") && !message.contains(".."), "\(message)")
	}

	/// etcd's own message may end in a full stop, which the sentence around it doubled.
	@Test func etcdsMessageLosesItsFullStopInsideTheSentence() async throws {
		let body =
			#"{"error":"etcdserver: request is not valid JSON.","message":"request is not valid JSON.","code":3}"#
		let message = try await Self.readError(replying: Self.reply("400 Bad Request", body))
		#expect(message.hasSuffix("HTTP 400: request is not valid JSON."), "\(message)")
	}

	@Test func aSuccessfulReplyThatIsNotJSONSaysWhatWasExpected() async throws {
		let message = try await Self.readError(replying: Self.reply("200 OK", "<html>\n"))
		#expect(message.hasSuffix("\"<html>\" where etcd's v3 gateway sends a JSON object."), "\(message)")
	}
}
