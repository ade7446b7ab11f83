import Defaults
import Foundation
import Testing

/// `defaults write -url` and `-json` store what an app's `Key<URL>` and `Codable` keys read, without the user typing
/// the JSON text by hand; `defaults read -url` and `-json` show those values the same way.
@Suite struct ToolWriteAppFormsTests {
	struct Window: Codable, Equatable, Defaults.Serializable {
		var width = 800
		var height = 600
	}

	@Test func aURLWrittenWithTheFlagReadsAsThatURLInTheApp() throws {
		let tool = try ToolRunner()
		try tool.succeed("write", "app", "exportURL", "-url", "file:///tmp/x")
		try tool.succeed("write", "app", "homePage", "-url", "https://example.com/a?b=1")
		try tool.succeed("write", "app", "folder", "-url", "/var/tmp/exports")

		let store = Defaults.FileStore.at(tool.file("app"))
		#expect(store[Defaults.Key<URL?>("exportURL", suite: store)] == URL(string: "file:///tmp/x"))
		#expect(store[Defaults.Key<URL?>("homePage", suite: store)] == URL(string: "https://example.com/a?b=1"))
		#expect(store[Defaults.Key<URL?>("folder", suite: store)] == URL(filePath: "/var/tmp/exports"))
	}

	@Test func jsonWrittenWithTheFlagReadsAsTheCodableValue() throws {
		let tool = try ToolRunner()
		try tool.succeed("write", "app", "window", "-json", #"{"width":1024,"height":768}"#)

		let store = Defaults.FileStore.at(tool.file("app"))
		#expect(
			store[Defaults.Key<Window>("window", default: Window(), suite: store)] == Window(width: 1024, height: 768))
	}

	@Test func textThatIsNotAURLOrJSONIsRefusedAndNothingIsWritten() throws {
		let tool = try ToolRunner()
		let notURL = try tool.run("write", "app", "exportURL", "-url", "not a url")
		#expect(notURL.status == 65, "\(notURL)")
		#expect(notURL.standardError.contains("is not a URL"))
		let notJSON = try tool.run("write", "app", "window", "-json", "{width: 1}")
		#expect(notJSON.status == 65, "\(notJSON)")
		#expect(notJSON.standardError.contains("is not JSON"))
		#expect(!FileManager.default.fileExists(atPath: tool.file("app").path))
	}

	@Test func valuesAnAppStoredReadBackAsTheURLAndTheJSONTheyAre() throws {
		let tool = try ToolRunner()
		let store = Defaults.FileStore.at(tool.file("app"))
		store[Defaults.Key<URL?>("exportURL", suite: store)] = URL(string: "file:///tmp/x")
		store[Defaults.Key<Window>("window", default: Window(), suite: store)] = Window(width: 1024, height: 768)
		#expect(store.flush())

		#expect(try tool.run("read", "app", "exportURL", "-url").standardOutput == "file:///tmp/x\n")
		#expect(
			try tool.run("read", "app", "window", "-json").standardOutput
				== "{\n  \"height\" : 768,\n  \"width\" : 1024\n}\n")
		let notURL = try tool.run("read", "app", "window", "-url")
		#expect(notURL.status == 65, "\(notURL)")
		#expect(notURL.standardError.contains("is not a URL"))
	}

	@Test func aURLWrittenWithTheFlagReadsBackWithTheFlag() throws {
		let tool = try ToolRunner()
		try tool.succeed("write", "app", "homePage", "-url", "https://example.com/a?b=1")
		#expect(try tool.run("read", "app", "homePage", "-url").standardOutput == "https://example.com/a?b=1\n")
	}
}
