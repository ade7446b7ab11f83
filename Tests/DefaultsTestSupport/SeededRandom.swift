/// SplitMix64: the same seed gives the same sequence on every platform, so that a machine's schedule of writes and
/// the fault suite's rounds repeat from their seeds.
///
/// ```swift
/// var random = SeededRandom(seed: 42)
/// let fault = random.next(below: 6)
/// ```
public struct SeededRandom {
	private var state: UInt64

	public init(seed: UInt64) {
		state = seed
	}

	public mutating func next() -> UInt64 {
		state &+= 0x9E37_79B9_7F4A_7C15
		var mixed = state
		mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
		mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
		return mixed ^ (mixed >> 31)
	}

	public mutating func next(below bound: UInt64) -> UInt64 {
		next() % max(bound, 1)
	}
}
