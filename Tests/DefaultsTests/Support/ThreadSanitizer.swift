import Foundation
import Testing

/// Whether the tests run under the thread sanitizer: `.ci/tsan` says so in the environment. The sanitizer slows every
/// instrumented process several times over, the test helpers the tests start included, so limits meant to catch a
/// hang or a slow path are scaled by ``sanitizerSlowdown`` there.
let runsUnderThreadSanitizer = ProcessInfo.processInfo.environment["DEFAULTS_TESTS_UNDER_THREAD_SANITIZER"] == "1"

/// How many times longer a limit is under the thread sanitizer.
let sanitizerSlowdown = runsUnderThreadSanitizer ? 5 : 1

extension Trait where Self == TimeLimitTrait {
	/// `.timeLimit(.minutes(minutes))`, ``sanitizerSlowdown`` times longer under the thread sanitizer.
	///
	/// ```swift
	/// @Suite(.scaledTimeLimit(minutes: 1)) struct WatchTests { … }
	/// ```
	static func scaledTimeLimit(minutes: Int) -> Self {
		.timeLimit(.minutes(minutes * sanitizerSlowdown))
	}
}

extension Duration {
	/// This duration, ``sanitizerSlowdown`` times longer under the thread sanitizer: for a bound on how long the code
	/// under test may take.
	var scaledForSanitizer: Duration {
		self * sanitizerSlowdown
	}
}
