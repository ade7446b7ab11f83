import Foundation
import Testing

/// `defaults write`: every type flag, bare values, and values that do not parse.
@Suite struct ToolWriteTests {
	let tool: ToolRunner

	init() throws {
		tool = try ToolRunner()
	}

	struct TypedWrite: CustomTestStringConvertible, Sendable {
		let arguments: [String]
		let type: String
		let printed: String
		var testDescription: String { arguments.joined(separator: " ") }
	}

	static let typedWrites: [TypedWrite] = [
		TypedWrite(arguments: ["-string", "Ada Lovelace"], type: "string", printed: "Ada Lovelace"),
		TypedWrite(arguments: ["-int", "-42"], type: "integer", printed: "-42"),
		TypedWrite(arguments: ["-integer", "18446744073709551615"], type: "integer", printed: "18446744073709551615"),
		TypedWrite(arguments: ["-float", "1.5"], type: "float", printed: "1.5"),
		TypedWrite(arguments: ["-bool", "YES"], type: "boolean", printed: "1"),
		TypedWrite(arguments: ["-boolean", "false"], type: "boolean", printed: "0"),
		TypedWrite(arguments: ["-date", "2024-05-01T12:00:00Z"], type: "date", printed: "2024-05-01 12:00:00 +0000"),
		TypedWrite(arguments: ["-date", "2024-05-01"], type: "date", printed: "2024-05-01 00:00:00 +0000"),
		TypedWrite(arguments: ["-data", "0badcafe01"], type: "data", printed: "<0badcafe 01>"),
		TypedWrite(arguments: ["-array", "a", "b c"], type: "array", printed: "(\n    a,\n    \"b c\"\n)"),
		TypedWrite(arguments: ["-dict", "k", "v"], type: "dictionary", printed: "{\n    k = v;\n}"),
		TypedWrite(arguments: ["plain text"], type: "string", printed: "plain text"),
		TypedWrite(arguments: ["-string", "-5"], type: "string", printed: "-5"),
	]

	@Test(arguments: typedWrites)
	func eachTypeFlagWritesItsType(_ write: TypedWrite) throws {
		try tool.succeed(["write", "app", "key"] + write.arguments)
		#expect(try tool.succeed("read-type", "app", "key") == "Type is \(write.type)\n")
		#expect(try tool.succeed("read", "app", "key") == write.printed + "\n")
	}

	@Test func valuesReachTheFileAsTheirPropertyListTypes() throws {
		try tool.succeed("write", "app", "count", "-int", "7")
		try tool.succeed("write", "app", "ratio", "-float", "0.25")
		try tool.succeed("write", "app", "on", "-bool", "yes")
		try tool.succeed("write", "app", "when", "-date", "2024-05-01T12:00:00.250Z")
		try tool.succeed("write", "app", "bytes", "-data", "<00ff>")
		let values = try tool.contents(of: "app")
		#expect(values["count"] as? Int == 7)
		#expect(values["ratio"] as? Double == 0.25)
		#expect(values["on"] as? Bool == true)
		#expect(values["bytes"] as? Data == Data([0x00, 0xff]))
		let when = try #require(values["when"] as? Date)
		#expect(abs(when.timeIntervalSince1970 - 1_714_564_800.25) < 0.001)
	}

	@Test func arrayAndDictionaryElementsTakeTypeFlags() throws {
		try tool.succeed("write", "app", "sizes", "-array", "-int", "10", "-bool", "no", "x")
		#expect(try tool.succeed("--json", "read", "app", "sizes") == "[\n  10,\n  false,\n  \"x\"\n]\n")
		try tool.succeed("write", "app", "window", "-dict", "width", "-int", "640", "title", "Main")
		#expect(try tool.succeed("read", "app", "window") == "{\n    title = Main;\n    width = 640;\n}\n")
	}

	@Test func arrayAddAppendsAndDictAddMerges() throws {
		try tool.succeed("write", "app", "recent", "-array-add", "a")
		try tool.succeed("write", "app", "recent", "-array-add", "b", "-int", "3")
		#expect(try tool.succeed("--json", "read", "app", "recent") == "[\n  \"a\",\n  \"b\",\n  3\n]\n")
		try tool.succeed("write", "app", "sizes", "-dict", "a", "1", "b", "2")
		try tool.succeed("write", "app", "sizes", "-dict-add", "b", "-int", "20", "c", "3")
		#expect(
			try tool.succeed("--json", "read", "app", "sizes")
				== "{\n  \"a\": \"1\",\n  \"b\": 20,\n  \"c\": \"3\"\n}\n")
		try tool.succeed("write", "app", "recent", "-array", "fresh")
		#expect(try tool.succeed("read", "app", "recent") == "(\n    fresh\n)\n")
	}

	@Test func addingToAValueOfAnotherTypeChangesNothing() throws {
		try tool.succeed("write", "app", "name", "Ada")
		let array = try tool.run("write", "app", "name", "-array-add", "x")
		#expect(array.status == 65, "\(array)")
		#expect(array.standardError.contains("not an array"))
		let dictionary = try tool.run("write", "app", "name", "-dict-add", "k", "v")
		#expect(dictionary.status == 65, "\(dictionary)")
		#expect(try tool.succeed("read", "app", "name") == "Ada\n")
	}

	@Test func aBareValueIsTextUnlessItIsAPropertyList() throws {
		try tool.succeed("write", "app", "word", "42")
		#expect(try tool.succeed("read-type", "app", "word") == "Type is string\n")
		try tool.succeed("write", "app", "list", "(a, \"b c\", { z = y; })")
		#expect(
			try tool.succeed("--json", "read", "app", "list")
				== "[\n  \"a\",\n  \"b c\",\n  {\n    \"z\": \"y\"\n  }\n]\n")
		let broken = try tool.run("write", "app", "list", "(unclosed")
		#expect(broken.status == 65, "\(broken)")
		#expect(broken.standardError.contains("-string"))
	}

	@Test(arguments: [
		["-int", "abc"], ["-int", "1.5"], ["-int", "99999999999999999999"], ["-float", "x"], ["-float", "inf"],
		["-bool", "maybe"], ["-date", "yesterday"], ["-data", "abc"], ["-data", "zz"],
		["-array", "-int", "x"], ["-dict", "k", "-bool", "2"],
	])
	func aValueThatDoesNotParseIsRefusedAndNothingIsWritten(_ value: [String]) throws {
		try tool.succeed("write", "app", "key", "kept")
		let result = try tool.run(["write", "app", "key"] + value)
		#expect(result.status == 65, "\(value): \(result)")
		#expect(result.standardError.hasPrefix("defaults: \""), "\(result)")
		#expect(try tool.succeed("read", "app", "key") == "kept\n")
	}

	@Test(arguments: [
		["-wat", "1"], ["-int"], ["-int", "1", "2"], ["one", "two"], ["-dict", "lonely"], ["-array", "-array", "x"],
		[],
	])
	func aMalformedWriteIsAUsageError(_ value: [String]) throws {
		let result = try tool.run(["write", "app", "key"] + value)
		#expect(result.status == 64, "\(value): \(result)")
		#expect(result.standardError.contains("usage: defaults write"))
		#expect(!FileManager.default.fileExists(atPath: tool.file("app").path))
	}

	@Test func aFilePathOrAppOptionNamesTheFile() throws {
		let path = tool.folder.file("elsewhere/settings.plist").path
		try FileManager.default.createDirectory(
			at: tool.folder.file("elsewhere"), withIntermediateDirectories: true)
		try tool.succeed("write", path, "a", "-int", "1")
		try tool.succeed("write", "-app", path, "b", "two")
		#expect(try tool.succeed("read", "-app", path) == "{\n    a = 1;\n    b = two;\n}\n")
		#expect(try tool.succeed("read", path, "b") == "two\n")
		// Before the verb too, as the help shows it.
		#expect(try tool.succeed("-app", path, "read", "b") == "two\n")
		try tool.succeed("--json", "-app", path, "write", "c", "-int", "3")
		#expect(try tool.succeed("-app", path, "read", "c") == "3\n")
		#expect(!FileManager.default.fileExists(atPath: tool.file("settings").path))
	}

	@Test func aWriteKeepsTheOtherKeysAndFoundationReadsTheFile() throws {
		try tool.seed("app", ["existing": "value", "number": 3])
		try tool.succeed("write", "app", "added", "-int", "4")
		let values = try tool.contents(of: "app")
		#expect(values["existing"] as? String == "value")
		#expect(values["number"] as? Int == 3)
		#expect(values["added"] as? Int == 4)
		// Replaced by a rename, never left half-written: no temporary file stays behind.
		let names = try FileManager.default.contentsOfDirectory(atPath: tool.folder.url.path)
		#expect(!names.contains { $0.contains(".tmp-") }, "\(names)")
	}
}
