import Synchronization

/// The parts of one watch that its consumer's termination must stop: the task that opens it (fetching a token
/// first), then the stream it opened. Whichever comes after `end()` is stopped at once.
final class RunningWatch: Sendable {
	private struct Parts {
		var task: Task<Void, Never>?
		var stream: (any GatewayStream)?
		var isEnded = false
	}

	private let parts = Mutex(Parts())

	func attach(_ task: Task<Void, Never>) {
		if parts.withLock({ parts in
			parts.task = task
			return parts.isEnded
		}) {
			task.cancel()
		}
	}

	func attach(_ stream: any GatewayStream) {
		if parts.withLock({ parts in
			parts.stream = stream
			return parts.isEnded
		}) {
			stream.cancel()
		}
	}

	func end() {
		let (task, stream) = parts.withLock { parts in
			parts.isEnded = true
			return (parts.task, parts.stream)
		}
		task?.cancel()
		stream?.cancel()
	}
}
