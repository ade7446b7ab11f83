import Foundation
import Testing

@testable import DefaultsToolCore

/// The command line parser, without running a verb: what is an option, a value, a positional argument, help.
@Suite struct ArgumentParsingTests {
	@Test func optionsBeforeTheVerbAreTakenOutAndTheRestIsTheVerbs() throws {
		let invocation = try Invocation(parsing: ["--json", "read", "app", "-h"])
		#expect(invocation.isJSON)
		#expect(invocation.verb == "read")
		#expect(invocation.arguments == ["app", "-h"])
	}

	/// The help lists `-app <path>` among the options before the verb; it was refused there ("Unknown option").
	@Test func appBeforeTheVerbIsPassedToTheVerbAsItsDomain() throws {
		let invocation = try Invocation(parsing: ["-app", "/tmp/x.plist", "read", "key"])
		#expect(invocation.verb == "read")
		#expect(invocation.arguments == ["-app", "/tmp/x.plist", "key"])
		var arguments = try VerbArguments(invocation.arguments, for: .read)
		guard case .file("/tmp/x.plist") = try arguments.takeDomain() else {
			Issue.record("-app before the verb did not name the file")
			return
		}
		#expect(try arguments.take("key") == "key")
		#expect(throws: ToolError.self) { try Invocation(parsing: ["-app"]) }
	}

	@Test(arguments: ["--help", "-help", "-h"])
	func helpFlagsAreRecognisedInEverySpelling(flag: String) throws {
		#expect(Invocation.isHelp(flag))
		#expect(try Invocation(parsing: [flag]).wantsHelp)
	}

	@Test func anUnknownOptionBeforeTheVerbIsAUsageError() {
		#expect(throws: ToolError.self) { try Invocation(parsing: ["--frobnicate", "read"]) }
		let status = (try? Invocation(parsing: ["-x"])).map { _ in ExitStatus.success } ?? .usage
		#expect(status == .usage)
	}

	@Test func anUnknownOptionOfAVerbIsAUsageErrorNamingTheVerb() {
		do {
			_ = try VerbArguments(["app", "--force"], for: .delete)
			Issue.record("--force was accepted")
		} catch {
			#expect(error.status == .usage)
			#expect(error.usageOf == "delete")
			#expect(error.message.contains("--force"))
		}
	}

	@Test func aDoubleDashMakesEverythingAfterItPositionalEvenFlagsAndHelp() throws {
		let arguments = try VerbArguments(["app", "--", "-x", "--help", "-"], for: .read)
		#expect(arguments.positionals == ["app", "-x", "--help", "-"])
	}

	@Test func aLoneDashIsAPositionalArgument() throws {
		#expect(try VerbArguments(["app", "-"], for: .exportDomain).positionals == ["app", "-"])
	}

	@Test func anOptionTakesTheNextWordAsItsValueEvenWhenItLooksLikeAFlag() throws {
		let arguments = try VerbArguments(["app", "--count", "-5"], for: .watch)
		#expect(arguments.options["--count"] == "-5")
		#expect(arguments.positionals == ["app"])
		#expect(throws: ToolError.self) { try arguments.number("--count") }
	}

	@Test func anOptionWithoutItsValueIsAUsageError() {
		#expect(throws: ToolError.self) { try VerbArguments(["app", "--timeout"], for: .watch) }
	}

	@Test func theDomainComesFromAppOrTheFirstPositional() throws {
		var byFile = try VerbArguments(["-app", "/tmp/x.plist", "key"], for: .read)
		guard case .file("/tmp/x.plist") = try byFile.takeDomain() else {
			Issue.record("-app did not name the file")
			return
		}
		#expect(try byFile.take("key") == "key")
		var byName = try VerbArguments(["editor"], for: .read)
		guard case .named("editor") = try byName.takeDomain() else {
			Issue.record("the first positional is not the domain")
			return
		}
	}

	@Test func argumentsNobodyTookAreRefused() throws {
		var arguments = try VerbArguments(["app", "key", "extra"], for: .read)
		_ = try arguments.takeDomain()
		_ = try arguments.take("key")
		#expect(throws: ToolError.self) { try arguments.finish() }
	}

	@Test func jsonAfterTheVerbCountsAsIfItCameBefore() throws {
		#expect(try VerbArguments(["app", "--json"], for: .read, isJSON: false).isJSON)
		#expect(try VerbArguments(["app"], for: .read, isJSON: true).isJSON)
	}

	@Test func everyVerbHasOneEntryAndItsHelpNamesIt() {
		let names = Verb.all.map(\.name)
		#expect(Set(names).count == names.count)
		for verb in Verb.all {
			#expect(Verb.named(verb.name)?.name == verb.name)
			#expect(Help.page(for: verb).contains("defaults \(verb.name)"))
		}
	}

	@Test func aVerbTakesOnlyTheOptionsItDeclares() throws {
		#expect(throws: ToolError.self) { try VerbArguments(["app", "--count", "1"], for: .read) }
		#expect(try VerbArguments(["app", "--count", "1"], for: .watch).options["--count"] == "1")
	}

	@Test(arguments: Verb.all)
	func everyOptionAVerbDeclaresParsesAndIsInItsUsageAndHelp(verb: Verb) throws {
		for option in verb.declaration.options {
			let typed = [option.name] + (option.takesValue ? ["1"] : [])
			// A verb that reads its own values (`write`) takes options only before its domain.
			let tokens = verb.declaration.valuesAfter == nil ? ["app"] + typed : typed + ["app"]
			let arguments = try VerbArguments(tokens, for: verb)
			#expect(arguments.has(option.name), "\(verb.name) \(option.name)")
			#expect(verb.usage.contains(option.isRequired ? " \(option.usage) " : "[\(option.usage)]"))
			#expect(Help.page(for: verb).contains("\n  \(option.usage)  "))
		}
		// Every verb takes the options common to all, at least before its domain.
		#expect(try VerbArguments(["--json", "-app", "/tmp/x.plist"], for: verb).isJSON)
	}

	@Test func optionHelpIsAlignedInAColumnUnderTheDetails() {
		let page = Help.page(for: .watch)
		#expect(page.contains("\n  --count <n>          exit after <n> changes\n"))
		#expect(page.contains("\n                       changes came\n"))
		#expect(Verb.watch.usage == "defaults watch <domain> [<key>...] [--count <n>] [--timeout <seconds>]")
		#expect(Verb.domains.usage == "defaults domains ")
		// Without -system they do nothing but say so: it is not optional.
		#expect(
			Verb.lock.usage == "defaults lock -system <domain> <key> [<type flag>] [<value>...] [-schema <path>]")
		#expect(Verb.unlock.usage == "defaults unlock -system <domain> <key>")
		#expect(Verb.write.usage.contains("[-system]"))
	}

	@Test func theOverviewListsEveryVerbWithItsSummaryOnce() {
		let lines = Help.overview.split(separator: "\n")
		for verb in Verb.all {
			let entries = lines.filter { $0.hasPrefix("  \(verb.name) ") && $0.hasSuffix(verb.declaration.summary) }
			#expect(entries.count == 1, "\(verb.name)")
		}
	}

	@Test func theCommandLineGuideListsEveryVerb() throws {
		let guide = try String(
			contentsOf: Fixtures.folder.deletingLastPathComponent().appending(
				path: "Sources/Defaults/Documentation.docc/TheDefaultsCommand.md"),
			encoding: .utf8)
		for verb in Verb.all {
			#expect(guide.contains("| `\(verb.name)"), "\(verb.name) is missing from the article TheDefaultsCommand.md")
		}
	}

	@Test func theCommandLineGuideListsEveryExitStatusOfTheHelpAndTheOverviewNamesTheLayers() throws {
		let guide = try String(
			contentsOf: Fixtures.folder.deletingLastPathComponent().appending(
				path: "Sources/Defaults/Documentation.docc/TheDefaultsCommand.md"),
			encoding: .utf8)
		let statuses = Help.exitStatuses.split(separator: "\n").compactMap { line in
			line.split(separator: " ").first.flatMap { Int($0) }
		}
		#expect(statuses.contains(77))
		for status in statuses {
			#expect(guide.contains("\n| \(status) | "), "exit status \(status) is missing from TheDefaultsCommand.md")
		}
		#expect(guide.contains("### Layers") && guide.contains("read -source"))
		#expect(Help.overview.contains("defaults read -source <domain>"))
		#expect(Help.overview.contains("$XDG_CONFIG_DIRS"))
	}

	@Test func writeLeavesItsValuesUnparsedEvenWhenTheyLookLikeFlags() throws {
		let typed = try VerbArguments(["app", "key", "-int", "5", "--json"], for: .write)
		#expect(typed.positionals == ["app", "key"])
		#expect(typed.values == ["-int", "5", "--json"])
		#expect(!typed.isJSON)
		let escaped = try VerbArguments(["app", "key", "--", "-h"], for: .write)
		#expect(escaped.values == ["--", "-h"])
	}

	@Test func writeTakesOptionsOnlyUntilTheDomainIsKnown() throws {
		var byFile = try VerbArguments(["-app", "/tmp/x.plist", "-x", "v"], for: .write)
		guard case .file("/tmp/x.plist") = try byFile.takeDomain() else {
			Issue.record("-app did not name the file")
			return
		}
		#expect(try byFile.take("key") == "-x")
		#expect(byFile.values == ["v"])
		#expect(try VerbArguments(["app", "-x", "v"], for: .write).positionals == ["app", "-x"])
		#expect(throws: ToolError.self) { try VerbArguments(["--frob", "app", "k", "v"], for: .write) }
	}

	/// The command lines that verbs' help pages show as examples (`defaults write app sizes -array -int 10`).
	static var helpExamples: [(verb: Verb, line: String)] {
		Verb.all.flatMap { verb in
			verb.declaration.details.split(separator: "\n").compactMap { line in
				line.range(of: "defaults ").map { (verb, String(line[$0.lowerBound...])) }
			}
		}
	}

	@Test func everyExampleInAVerbsHelpParses() throws {
		#expect(!Self.helpExamples.isEmpty)
		for (verb, line) in Self.helpExamples {
			let invocation = try Invocation(parsing: line.split(separator: " ").dropFirst().map(String.init))
			#expect(invocation.verb == verb.name, "\(line)")
			var arguments = try VerbArguments(invocation.arguments, for: verb)
			_ = try arguments.takeDomain()
			if verb == .write {
				_ = try arguments.take("key")
				_ = try WriteRequest(tokens: arguments.values)
			}
		}
	}
}
