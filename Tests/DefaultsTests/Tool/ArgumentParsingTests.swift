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
			_ = try VerbArguments(["app", "--force"], verb: "delete", options: [])
			Issue.record("--force was accepted")
		} catch {
			#expect(error.status == .usage)
			#expect(error.usageOf == "delete")
			#expect(error.message.contains("--force"))
		}
	}

	@Test func aDoubleDashMakesEverythingAfterItPositionalEvenFlagsAndHelp() throws {
		let arguments = try VerbArguments(["app", "--", "-x", "--help", "-"], verb: "read", options: [])
		#expect(arguments.positionals == ["app", "-x", "--help", "-"])
	}

	@Test func aLoneDashIsAPositionalArgument() throws {
		#expect(try VerbArguments(["app", "-"], verb: "export", options: []).positionals == ["app", "-"])
	}

	@Test func anOptionTakesTheNextWordAsItsValueEvenWhenItLooksLikeAFlag() throws {
		let arguments = try VerbArguments(["app", "--count", "-5"], verb: "watch", options: [.count])
		#expect(arguments.options["--count"] == "-5")
		#expect(arguments.positionals == ["app"])
		#expect(throws: ToolError.self) { try arguments.number("--count") }
	}

	@Test func anOptionWithoutItsValueIsAUsageError() {
		#expect(throws: ToolError.self) { try VerbArguments(["app", "--timeout"], verb: "watch", options: [.timeout]) }
	}

	@Test func theDomainComesFromAppOrTheFirstPositional() throws {
		var byFile = try VerbArguments(["-app", "/tmp/x.plist", "key"], verb: "read", options: [])
		guard case .file("/tmp/x.plist") = try byFile.takeDomain() else {
			Issue.record("-app did not name the file")
			return
		}
		#expect(try byFile.take("key") == "key")
		var byName = try VerbArguments(["editor"], verb: "read", options: [])
		guard case .named("editor") = try byName.takeDomain() else {
			Issue.record("the first positional is not the domain")
			return
		}
	}

	@Test func argumentsNobodyTookAreRefused() throws {
		var arguments = try VerbArguments(["app", "key", "extra"], verb: "read", options: [])
		_ = try arguments.takeDomain()
		_ = try arguments.take("key")
		#expect(throws: ToolError.self) { try arguments.finish() }
	}

	@Test func jsonAfterTheVerbCountsAsIfItCameBefore() throws {
		var context = Context(isJSON: false)
		_ = try VerbArguments(["app", "--json"], verb: "read", context: &context)
		#expect(context.isJSON)
	}

	@Test func everyVerbHasOneEntryAndItsHelpNamesIt() {
		let names = Verb.all.map(\.name)
		#expect(Set(names).count == names.count)
		for verb in Verb.all {
			#expect(Verb.named(verb.name)?.name == verb.name)
			#expect(Help.page(for: verb).contains("defaults \(verb.name)"))
		}
	}
}
