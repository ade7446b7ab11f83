import Foundation
import Testing

/// `DispatchStart` makes libdispatch create its timer descriptor while descriptors are free, so that a timer armed
/// later, at the descriptor limit, still fires. Its start-up timer once had a deadline of `.now()`, which libdispatch
/// ran as a plain `async`, with no timer: at the limit a later timer then never fired.
@Suite(.scaledTimeLimit(minutes: 1)) struct DispatchStartTests {
	@Test func aTimerArmedAtTheDescriptorLimitFires() async throws {
		let result = try await ChildProcess(["dispatch-timer-at-descriptor-limit"]).wait(timeout: 20)
		#expect(result.status == 0, "\(result)")
		#expect(result.lines == ["fired"], "\(result)")
	}
}
