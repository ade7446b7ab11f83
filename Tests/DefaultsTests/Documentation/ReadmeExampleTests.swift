// Mirrors the two examples in README.md: the same code, run. Keep them in step. Differences: the types and keys
// carry a `readme` prefix (types) or stored-name prefix (keys) so that they meet no other test's, and each test
// resets its keys.
import Defaults
import Foundation
import Observation
import Testing

private enum ReadmeTheme: String, Defaults.Serializable { case light, dark }
private struct ReadmeWindow: Codable, Defaults.Serializable { var width = 800, height = 600 }

extension Defaults.Keys {
	fileprivate static let launchCount = Key<Int>("readmeLaunchCount", default: 0)
	fileprivate static let theme = Key<ReadmeTheme>("readmeTheme", default: .light)
	fileprivate static let window = Key<ReadmeWindow>("readmeWindow", default: ReadmeWindow())
	fileprivate static let lastFile = Key<URL?>("readmeLastFile")  // optional: defaults to nil
}

@Suite(.serialized, .scaledTimeLimit(minutes: 1)) struct ReadmeExampleTests {
	init() {
		Defaults.reset(.launchCount, .theme, .window, .lastFile)
	}

	@Test func theOpeningExample() {
		defer { Defaults.reset(.launchCount, .theme, .window, .lastFile) }
		let printed = Printed()

		Defaults[.launchCount] += 1  // on disk by itself: no synchronize()
		Defaults[.window].width = 1024  // stored as {"height":600,"width":1024}
		let observation = Defaults.observe(.theme) { printed.append("\($0.newValue)") }
		Defaults[.theme] = .dark  // prints "dark"
		Defaults.reset(.theme)

		#expect(Defaults[.launchCount] == 1)
		#expect(
			Defaults.standardStore.storedValue(forKey: "readmeWindow") as? String == "{\"height\":600,\"width\":1024}")
		#expect(printed.lines == ["light", "dark", "light"])
		#expect(Defaults[.lastFile] == nil)
		observation.invalidate()
	}

	@Test func theObservationExample() async {
		defer { Defaults.reset(.launchCount, .theme) }
		let printed = Printed()

		let observation = Defaults.observe(.launchCount) { change in
			printed.append("\(change.oldValue) -> \(change.newValue)")
		}
		Defaults[.launchCount] = 5
		Defaults.withoutPropagation { Defaults[.launchCount] = 0 }  // written, but observers don't hear it
		#expect(printed.lines == ["0 -> 0", "0 -> 5"])
		#expect(Defaults[.launchCount] == 0)
		observation.invalidate()

		let settings = ReadmeSettings()
		settings.theme = .dark
		#expect(Defaults[.theme] == .dark)
		settings.$theme.reset()
		#expect(settings.theme == .light)

		let model = ReadmeSettingsModel()
		let fired = Printed()
		withObservationTracking {
			_ = model.theme
		} onChange: {
			fired.append("changed")
		}
		Defaults[.theme] = .dark  // from anywhere, not only the model
		#expect(fired.lines == ["changed"])
		#expect(model.theme == .dark)

		for await theme in Defaults.updates(.theme) {
			#expect(theme == .dark)  // the current value first
			break
		}
	}
}

private final class ReadmeSettings {
	@Default(.theme) var theme: ReadmeTheme
}

@Observable private final class ReadmeSettingsModel {
	private let storedTheme = Defaults.ObservableValue(.theme)
	var theme: ReadmeTheme {
		get { storedTheme.value }
		set { storedTheme.value = newValue }
	}
}

/// Lines a handler printed, collected thread-safely.
private final class Printed: @unchecked Sendable {
	private let lock = NSLock()
	private var collected: [String] = []

	var lines: [String] { lock.withLock { collected } }

	func append(_ line: String) {
		lock.withLock { collected.append(line) }
	}
}
