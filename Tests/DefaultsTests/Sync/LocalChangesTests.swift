import Foundation
import Testing

@testable import Defaults

/// The count of local changes a push uses to forget only what it pushed.
@Suite(.scaledTimeLimit(minutes: 1)) struct LocalChangesTests {
	@Test func aNameIsForgottenOnlyIfNoChangeCameAfterWhatWasPushed() {
		let changes = LocalChanges()
		let theme = changes.counter(for: "theme")
		theme.bump()
		theme.bump()
		changes.note("font")
		#expect(changes.pending() == ["theme": 2, "font": 1])

		// Pushed at change 2, and a third change came in meanwhile: still pending.
		theme.bump()
		changes.forget("theme", upTo: 2)
		#expect(changes.pending() == ["theme": 3, "font": 1])
		changes.forget("theme", upTo: 3)
		changes.forget("font", upTo: nil)
		#expect(changes.pending().isEmpty)
		#expect(changes.pendingCount == 0)

		// A push that finishes late cannot make an older count win.
		theme.bump()
		changes.forget("theme", upTo: 2)
		#expect(changes.pending() == ["theme": 4])
	}

	@Test func concurrentWritesAreAllCounted() async {
		let changes = LocalChanges()
		let counter = changes.counter(for: "k")
		await withTaskGroup(of: Void.self) { group in
			for _ in 0..<4 {
				group.addTask {
					for _ in 0..<10_000 {
						counter.bump()
					}
				}
			}
		}
		#expect(changes.pending() == ["k": 40_000])
	}
}
