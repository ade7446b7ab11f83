import Defaults
import Foundation
import Testing

/// `print` shows the value an `AnySerializable` holds, not its storage.
@Suite struct AnySerializableDescriptionTests {
	@Test func printShowsTheWrappedValue() {
		#expect("\(Defaults.AnySerializable("🦄"))" == "🦄")
		#expect(String(describing: Defaults.AnySerializable(3)) == "3")
		#expect(String(describing: Defaults.AnySerializable(true)) == "true")
		let nothing: Defaults.AnySerializable = nil
		#expect(String(describing: nothing) == "nil")
	}

	@Test func aCollectionOfThemPrintsAsItsValues() {
		let options: [String: Defaults.AnySerializable] = ["unicorn": "🦄"]
		#expect(String(describing: options) == #"["unicorn": "🦄"]"#)
		let list: [Defaults.AnySerializable] = [1, "two"]
		#expect(String(describing: list) == #"[1, "two"]"#)
	}
}
