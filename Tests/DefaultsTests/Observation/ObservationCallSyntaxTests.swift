import Defaults
import Foundation
import Observation
import Testing

// Keys declared the usual way, so that the calls below use the short `.name` syntax of the well-known API.
extension Defaults.Keys {
	fileprivate static let syntaxStore = Defaults.InMemoryStore()
	fileprivate static let syntaxLevel = Key<Int>("syntaxLevel", default: 1, suite: syntaxStore)
	fileprivate static let syntaxTitle = Key<String>("syntaxTitle", default: "a", suite: syntaxStore)
	fileprivate static let syntaxFlag = Key<Bool>("syntaxFlag", default: false, suite: syntaxStore)
}

@Observable
private final class SyntaxModel {
	private let storedLevel = Defaults.ObservableValue(.syntaxLevel)

	var level: Int {
		get { storedLevel.value }
		set { storedLevel.value = newValue }
	}
}

/// Code written for the well-known Defaults API compiles unchanged: these are its call shapes.
@Suite("observation call syntax", .serialized, .scaledTimeLimit(minutes: 1))
struct ObservationCallSyntaxTests {
	@Test func theWellKnownCallsCompileAndRun() async {
		var singles: [Int] = []
		for await value in Defaults.updates(.syntaxLevel) {
			singles.append(value)
			break
		}
		for await (level, title) in Defaults.updates(.syntaxLevel, .syntaxTitle) {
			#expect(level == 1 && title == "a")
			break
		}
		for await (level, title, flag) in Defaults.updates(.syntaxLevel, .syntaxTitle, .syntaxFlag, initial: true) {
			#expect(level == 1 && title == "a" && !flag)
			break
		}
		for await _ in Defaults.updates([.syntaxLevel, .syntaxTitle]) {
			break
		}
		let changes = Recorder<Int>()
		let observation = Defaults.observe(.syntaxLevel) { change in
			changes.append(change.newValue)
		}
		let group = Defaults.observe(keys: .syntaxLevel, .syntaxTitle, options: []) {
			changes.append(-1)
		}
		Defaults.withoutPropagation {
			Defaults[.syntaxLevel] = 11
		}
		Defaults[.syntaxTitle] = "b"
		observation.invalidate()
		group.invalidate()
		Defaults.reset(.syntaxLevel, .syntaxTitle)
		#expect(singles == [1])
		#expect(changes.values == [1, -1])
		let model = SyntaxModel()
		model.level = 2
		#expect(Defaults[.syntaxLevel] == 2)
		Defaults.reset(.syntaxLevel)
	}
}
