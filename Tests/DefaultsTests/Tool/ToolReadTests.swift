import Foundation
import Testing

/// `defaults read`, `read-type`, `domains` and `find`, in text and with `--json`.
@Suite struct ToolReadTests {
	let tool: ToolRunner

	init() throws {
		tool = try ToolRunner()
		try tool.seed(
			"app",
			[
				"name": "Ada Lovelace", "count": 3, "ratio": 0.5, "enabled": true,
				"when": Date(timeIntervalSince1970: 1_714_564_800), "bytes": Data([1, 2, 3, 4, 5]),
				"list": ["a", 2], "window": ["width": 640, "title": "Main \"one\""],
			])
	}

	@Test func readPrintsADomainInPropertyListText() throws {
		let expected = """
			{
			    bytes = <01020304 05>;
			    count = 3;
			    enabled = 1;
			    list = (
			        a,
			        2
			    );
			    name = "Ada Lovelace";
			    ratio = 0.5;
			    when = "2024-05-01 12:00:00 +0000";
			    window = {
			        title = "Main \\"one\\"";
			        width = 640;
			    };
			}

			"""
		#expect(try tool.succeed("read", "app") == expected)
	}

	@Test func readOfAKeyPrintsTextAsItIs() throws {
		#expect(try tool.succeed("read", "app", "name") == "Ada Lovelace\n")
		#expect(try tool.succeed("read", "app", "count") == "3\n")
		#expect(try tool.succeed("read", "app", "list") == "(\n    a,\n    2\n)\n")
	}

	@Test func readWithJSONPrintsJSON() throws {
		let expected = """
			{
			  "bytes": "AQIDBAU=",
			  "count": 3,
			  "enabled": true,
			  "list": [
			    "a",
			    2
			  ],
			  "name": "Ada Lovelace",
			  "ratio": 0.5,
			  "when": "2024-05-01T12:00:00.000Z",
			  "window": {
			    "title": "Main \\"one\\"",
			    "width": 640
			  }
			}

			"""
		#expect(try tool.succeed("read", "app", "--json") == expected)
		#expect(try tool.succeed("--json", "read", "app", "name") == "\"Ada Lovelace\"\n")
		let parsed = try JSONSerialization.jsonObject(with: Data(try tool.succeed("--json", "read", "app").utf8))
		#expect((parsed as? [String: Any])?["count"] as? Int == 3)
	}

	@Test func readWithNoDomainPrintsEveryDomain() throws {
		try tool.succeed("write", "other", "colour", "blue")
		let output = try tool.succeed("--json", "read")
		let parsed = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
		#expect(Set(parsed.keys) == ["app", "other"])
		#expect((parsed["other"] as? [String: Any])?["colour"] as? String == "blue")
	}

	@Test func aMissingDomainOrKeyExitsWithOne() throws {
		let domain = try tool.run("read", "nothing")
		#expect(domain.status == 1, "\(domain)")
		#expect(domain.standardError.contains("Domain nothing does not exist"))
		#expect(!FileManager.default.fileExists(atPath: tool.file("nothing").path))
		let key = try tool.run("read", "app", "missing")
		#expect(key.status == 1, "\(key)")
		#expect(key.standardError.contains("(app, missing) does not exist"))
		#expect(try tool.run("read-type", "app", "missing").status == 1)
	}

	@Test(arguments: [
		("name", "string"), ("count", "integer"), ("ratio", "float"), ("enabled", "boolean"), ("when", "date"),
		("bytes", "data"), ("list", "array"), ("window", "dictionary"),
	])
	func readTypeNamesEachType(key: String, type: String) throws {
		#expect(try tool.succeed("read-type", "app", key) == "Type is \(type)\n")
		#expect(try tool.succeed("read-type", "app", key, "--json") == "\"\(type)\"\n")
	}

	@Test func domainsListsThePropertyListsOfTheConfigurationFolder() throws {
		try tool.succeed("write", "zeta", "k", "v")
		try Data("not settings".utf8).write(to: tool.folder.file("notes.txt"))
		#expect(try tool.succeed("domains") == "app, zeta\n")
		#expect(try tool.succeed("domains", "--json") == "[\"app\",\"zeta\"]\n")
	}

	@Test func findSearchesKeysValuesAndDomainNames() throws {
		try tool.succeed("write", "other", "colour", "-array", "red", "Lovelace blue")
		let byValue = try tool.succeed("find", "lovelace")
		#expect(byValue.contains("Found 1 key in domain 'app': {\n    name = \"Ada Lovelace\";\n}"))
		#expect(byValue.contains("Found 1 key in domain 'other'"))
		let byKey = try tool.succeed("--json", "find", "WIDTH")
		let parsed = try #require(try JSONSerialization.jsonObject(with: Data(byKey.utf8)) as? [String: Any])
		#expect(Array(parsed.keys) == ["app"])
		#expect((parsed["app"] as? [String: Any]).map { Set($0.keys) } == ["window"])
		#expect(try tool.succeed("find", "oth").contains("Found 1 key in domain 'other'"))
		let nothing = try tool.run("find", "absent-word")
		#expect(nothing.status == 1, "\(nothing)")
		#expect(nothing.standardOutput.isEmpty)
	}

	@Test func readingChangesNothingOnDisk() throws {
		let before = try FileManager.default.contentsOfDirectory(atPath: tool.folder.url.path).sorted()
		let bytes = try Data(contentsOf: tool.file("app"))
		try tool.succeed("read", "app")
		try tool.succeed("read-type", "app", "name")
		try tool.succeed("find", "Ada")
		try tool.succeed("domains")
		try tool.succeed("export", "app", "-")
		#expect(try FileManager.default.contentsOfDirectory(atPath: tool.folder.url.path).sorted() == before)
		#expect(try Data(contentsOf: tool.file("app")) == bytes)
	}
}
