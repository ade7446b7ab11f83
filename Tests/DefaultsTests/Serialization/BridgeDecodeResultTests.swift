import DefaultsTestSupport
import Foundation
import Testing

@testable import Defaults

/// A built-in bridge decodes a stored value once: the value its `deserialize` returns and the reason a read failed come
/// from the same walk, so they cannot disagree.
@Suite struct BridgeDecodeResultTests {
	@Test func theValueIsDeserializesValue() {
		#expect(Defaults.ArrayBridge<Int>().decode(storedForm: [1, 2]).value == [1, 2])
		#expect(Defaults.ArrayBridge<Int>().deserialize([1, 2]) == [1, 2])
		#expect(Defaults.RangeBridge<Range<Int>>().decode(storedForm: [1, 3]).value == 1..<3)
		#expect(Defaults.RawRepresentableBridge<Theme>().decode(storedForm: "dark").value == .dark)
		#expect(Defaults.IntegerBridge<Int8>().decode(storedForm: 300).value == nil)
		#expect(Defaults.IntegerBridge<Int8>().deserialize(300) == nil)
	}

	@Test func aFailureCarriesTheReasonOfTheWalkThatFailed() {
		#expect(
			Defaults.IntegerBridge<Int8>().decode(storedForm: 300).failureReason
				== "300 is not a whole number in the range of Int8 (-128…127)")
		#expect(
			Defaults.ArrayBridge<Int>().decode(storedForm: [1, "x"] as [Any]).failureReason
				== #"element 1: expected an integer, found a String ("x")"#)
		#expect(
			Defaults.RangeBridge<Range<Int>>().decode(storedForm: [3, 1]).failureReason
				== "the lower bound is above the upper bound")
		#expect(
			Defaults.RawRepresentableBridge<Theme>().decode(storedForm: "sepia").failureReason
				== "Theme has no value with the raw value sepia")
		#expect(
			Defaults.UUIDBridge().decode(storedForm: 5).failureReason?.hasPrefix("expected a UUID string such as")
				== true)
	}

	@Test func aDictionaryNamesItsFirstFailingEntryInNameOrder() {
		// Whatever order the dictionary walks in, the entry reported is the same one.
		let stored: [String: Any] = ["d": "x", "a": 1, "c": "y", "b": 2, "e": "z"]
		for _ in 0..<20 {
			#expect(
				Defaults.DictionaryBridge<String, Int>().decode(storedForm: stored).failureReason
					== #"value for 'c': expected an integer, found a String ("y")"#)
		}
		#expect(
			Defaults.DictionaryBridge<Int, Int>().decode(storedForm: ["1": 1, "z": 2, "q": "x"]).failureReason
				== "the key 'q' is not a Int")
	}

	@Test func aUsersBridgeGetsTheGenericSentence() {
		struct Halving: Defaults.Bridge {
			func serialize(_ value: Int?) -> Int? { value.map { $0 * 2 } }
			func deserialize(_ object: Int?) -> Int? { object.flatMap { $0.isMultiple(of: 2) ? $0 / 2 : nil } }
		}
		#expect(StoredForm.decoded(4, through: Halving()).value == 2)
		#expect(StoredForm.decoded(3, through: Halving()).failureReason == "Halving did not accept a Int (3)")
		#expect(
			StoredForm.decoded("3", through: Halving()).failureReason
				== #"Halving expects a Int, and found a String ("3")"#)
	}
}
