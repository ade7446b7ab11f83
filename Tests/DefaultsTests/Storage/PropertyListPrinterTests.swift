import Defaults
import Foundation
import Testing

/// The one printer of stored values, in each of its notations. The texts are pinned: the tagged one orders the
/// elements of stored sets, and the OpenStep and JSON ones are the `defaults` command's output.
@Suite struct PropertyListPrinterTests {
	typealias Printer = Defaults.PropertyList.Printer

	/// One of every property-list shape, with a string that needs quoting and data longer than four bytes.
	static var value: [String: Any] {
		[
			"flag": true, "count": 3, "ratio": 0.5, "name": "a \"b\"", "when": Date(timeIntervalSinceReferenceDate: 0),
			"bytes": Data([0x0b, 0xad, 0xca, 0xfe, 0x01]), "list": [1, "x"], "empty": [String: Any](),
		]
	}

	@Test func swiftNotationReadsLikeSwiftLiterals() {
		#expect(
			Printer(.swift).text(of: Self.value)
				== #"["bytes": 5 bytes, "count": 3, "empty": [:], "flag": true, "list": [1, "x"], "name": "a \"b\"", "#
				+ #""ratio": 0.5, "when": 2001-01-01T00:00:00Z]"#)
	}

	@Test func typedNotationNamesEveryType() {
		#expect(
			Printer(.typed).text(of: Self.value)
				== #"{bytes: data (5 bytes: 0badcafe01), count: integer 3, empty: {}, flag: boolean true, "#
				+ #"list: [integer 1, string "x"], name: string "a \"b\"", ratio: real 0.5, "#
				+ #"when: date 2001-01-01T00:00:00Z}"#)
	}

	@Test func taggedNotationIsExactAndTagsEveryValue() {
		#expect(
			Printer(.tagged).text(of: Self.value)
				== #"d:{"bytes":d:C63K/gE=,"count":i:3,"empty":d:{},"flag":b:true,"list":a:[i:1,s:"x"],"#
				+ #""name":s:"a \"b\"","ratio":r:0.5,"when":t:0.0}"#)
		#expect(Printer(.tagged).text(of: 1) != Printer(.tagged).text(of: true))
		#expect(Printer(.tagged).text(of: 1) != Printer(.tagged).text(of: 1.0))
	}

	@Test func openStepNotationIsWhatMacOSDefaultsPrints() {
		#expect(
			Printer(.openStep).text(of: Self.value)
				== #"{ bytes = <0badcafe 01>; count = 3; empty = { }; flag = 1; list = (1, x); name = "a \"b\""; "#
				+ #"ratio = 0.5; when = "2001-01-01 00:00:00 +0000"; }"#)
		#expect(
			Printer(.openStep, indent: 4).text(of: ["a": [1, [Any]()], "b": [String: Any]()]) == """
				{
				    a = (
				        1,
				        (
				        )
				    );
				    b = {
				    };
				}
				""")
	}

	@Test func jsonNotationKeepsTypesAndSpellsWhatJSONCannotHoldAsNull() {
		#expect(
			Printer(.json).text(of: ["b": Data([1]), "d": Date(timeIntervalSinceReferenceDate: 0.25), "r": 1.0])
				== #"{"b":"AQ==","d":"2001-01-01T00:00:00.250Z","r":1.0}"#)
		#expect(Printer(.json).text(of: [Double.nan, .infinity]) == "[null,null]")
		#expect(
			Printer(.json, indent: 2).text(of: ["a": [1], "e": [Any]()]) == "{\n  \"a\": [\n    1\n  ],\n  \"e\": []\n}"
		)
		#expect(Printer(.json).text(of: "tab\t\u{1}") == #""tab\t\u0001""#)
		#expect(Printer(.openStep).text(of: "tab\t\u{1}") == #""tab\t\U0001""#)
	}

	@Test(arguments: [Defaults.PropertyList.Notation.swift, .typed, .openStep, .json])
	func aDateThatIsNotAPointInTimeIsPrintedWithoutATrap(notation: Defaults.PropertyList.Notation) {
		let text = Printer(notation).text(of: [Date(timeIntervalSinceReferenceDate: .nan)])
		#expect(text.contains("an invalid date (nan seconds)"), "\(text)")
	}

	@Test(arguments: [
		(Date.distantPast, "0000-12-30", "00:00:00"), (Date.distantFuture, "4001-01-01", "00:00:00"),
		(Date(timeIntervalSinceReferenceDate: 252_460_800_000), "+10001-03-02", "00:00:00"),
		(Date(timeIntervalSinceReferenceDate: -63_200_000_000), "-0002-04-10", "12:26:40"),
		(Date(timeIntervalSinceReferenceDate: 730_902_896.789), "2024-02-29", "12:34:56"),
		(Date(timeIntervalSinceReferenceDate: -0.5), "2000-12-31", "23:59:59"),
	])
	func aDateIsOnTheSameCalendarDayInEveryNotation(date: Date, day: String, time: String) {
		#expect(Printer(.swift).text(of: date) == "\(day)T\(time)Z")
		#expect(Printer(.typed).text(of: date) == "date \(day)T\(time)Z")
		#expect(Printer(.openStep).text(of: date) == "\"\(day) \(time) +0000\"")
		#expect(Printer(.json).text(of: date).hasPrefix("\"\(day)T\(time)."))
		#expect(Printer.openStepDate(date) == "\(day) \(time) +0000")
		#expect(Printer.iso8601Date(date) == "\(day)T\(time)Z")
	}

	@Test(arguments: [Defaults.PropertyList.Notation.swift, .typed, .openStep, .json])
	func aDateMoreThanAMillionYearsAwayIsPrintedAsASentence(notation: Defaults.PropertyList.Notation) {
		let text = Printer(notation).text(of: [Date(timeIntervalSinceReferenceDate: 1e300)])
		#expect(text.contains("a date out of range (1e+300 seconds from 2001-01-01)"), "\(text)")
	}

	@Test func aLimitCutsTheTextAndMarksTheCut() {
		let long = [String](repeating: "abcdefghij", count: 1000)
		let text = Printer(.swift, limit: 120).text(of: long)
		#expect(text.count == 121)
		#expect(text.hasSuffix("…"))
		#expect(Printer(.swift, limit: 120).text(of: [1, 2]) == "[1, 2]")
	}

	@Test func dataTheNotationCannotReadIntoCanBeNamedByTheCaller() {
		let printer = Printer(.typed) { data in data.first == 0xff ? "marker" : nil }
		#expect(printer.text(of: [Data([0xff]), Data([1])]) == "[marker, data (1 bytes: 01)]")
	}
}
