import Foundation
import Testing

@testable import Defaults

/// `Defaults.update` in one process: threads, transactions, throwing closures, observers, errors.
@Suite(.scaledTimeLimit(minutes: 1)) struct UpdateTests {
	struct Refused: Error {}

	/// A file store on a file of its own, for the tests that need the file store's update.
	static func fileStore(in folder: TemporaryDirectory) -> Defaults.FileStore {
		Defaults.FileStore.at(folder.file("update-\(UUID().uuidString).plist"))
	}

	@Test(arguments: ["memory", "file"])
	func eightTasksIncrementingOneKeyLoseNoIncrement(storeKind: String) async throws {
		let folder = try TemporaryDirectory()
		let store: any Defaults.Store = storeKind == "file" ? Self.fileStore(in: folder) : Defaults.InMemoryStore()
		let counter = Defaults.Key<Int>("counter", default: 0, suite: store)
		// The file store writes its file at each update, so it gets fewer; memory gets enough to race for sure.
		let perTask = storeKind == "file" ? 100 : 1_000
		await withTaskGroup(of: Void.self) { group in
			for _ in 0..<8 {
				group.addTask {
					for _ in 0..<perTask {
						try! await Defaults.update(counter) { value in
							// A closure that takes a moment between reading and writing: without the update's lock,
							// another task's update would surely come in between.
							let read = value
							sched_yield()
							value = read + 1
						}
					}
				}
			}
		}
		#expect(store[counter] == 8 * perTask)
		if let fileStore = store as? Defaults.FileStore {
			#expect(try FileContents.values(of: fileStore.url)["counter"] as? Int == 8 * perTask)
		}
	}

	@Test func theUpdateReturnsTheNewValueAndStoresIt() throws {
		let store = Defaults.InMemoryStore()
		let names = Defaults.Key<[String]>("names", default: ["a"], suite: store)
		let result = try Defaults.update(names) { $0.append("b") }
		#expect(result == ["a", "b"])
		#expect(store[names] == ["a", "b"])
	}

	@Test(arguments: ["memory", "file"])
	func aThrowingClosureChangesNothingAndNotifiesNobody(storeKind: String) throws {
		let folder = try TemporaryDirectory()
		let store: any Defaults.Store = storeKind == "file" ? Self.fileStore(in: folder) : Defaults.InMemoryStore()
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let other = Defaults.Key<Int>("other", default: 1, suite: store)
		store[level] = 3
		store.flush()
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		defer { observation.invalidate() }
		#expect(throws: Refused.self) {
			try Defaults.update(level) { value in
				value = 99
				throw Refused()
			}
		}
		#expect(throws: Refused.self) {
			try Defaults.update([level, other]) { transaction in
				transaction[level] = 50
				transaction[other] = 50
				throw Refused()
			}
		}
		#expect(store[level] == 3)
		#expect(store[other] == 1)
		#expect(changes.values.isEmpty)
		if let fileStore = store as? Defaults.FileStore {
			#expect(!fileStore.hasPendingChanges)
			#expect(try FileContents.values(of: fileStore.url)["level"] as? Int == 3)
		}
	}

	@Test(arguments: ["memory", "file"])
	func observersHearExactlyOneChangePerUpdate(storeKind: String) throws {
		let folder = try TemporaryDirectory()
		let store: any Defaults.Store = storeKind == "file" ? Self.fileStore(in: folder) : Defaults.InMemoryStore()
		let level = Defaults.Key<Int>("level", default: 1, suite: store)
		let changes = Recorder<Defaults.KeyChange<Int>>()
		let observation = Defaults.observe(level, options: []) { changes.append($0) }
		defer { observation.invalidate() }
		try Defaults.update(level) { $0 += 1 }
		try Defaults.update(level) { value in
			// Written twice inside the closure: still one change.
			value += 10
			value += 10
		}
		try Defaults.update(level) { _ in }
		#expect(
			changes.values == [
				.init(oldValue: 1, newValue: 2), .init(oldValue: 2, newValue: 22), .init(oldValue: 22, newValue: 22),
			])
	}

	@Test func aTransactionStoresEveryKeyItWroteAndNotifiesEachOnce() throws {
		let store = Defaults.InMemoryStore()
		let checking = Defaults.Key<Int>("checking", default: 100, suite: store)
		let savings = Defaults.Key<Int>("savings", default: 0, suite: store)
		let log = Defaults.Key<[String]>("log", default: [], suite: store)
		let heard = Recorder<String>()
		let observation = Defaults.observe(keys: checking, savings, log, options: []) { heard.append("change") }
		defer { observation.invalidate() }
		let moved = try Defaults.update([checking, savings, log]) { accounts in
			accounts[checking] -= 25
			accounts[savings] += 25
			accounts[savings] += 0
			return accounts[savings]
		}
		#expect(moved == 25)
		#expect(store[checking] == 75 && store[savings] == 25 && store[log] == [])
		// `log` was only named, never written: two keys written, two changes.
		#expect(heard.count == 2)
	}

	@Test func aTransactionOfKeysInTwoStoresIsRefused() {
		let first = Defaults.Key<Int>("a", default: 0, suite: Defaults.InMemoryStore())
		let second = Defaults.Key<Int>("b", default: 0, suite: Defaults.InMemoryStore())
		#expect {
			try Defaults.update([first, second]) { _ in }
		} throws: { error in
			(error as? Defaults.UpdateError)?.kind == .keysInSeveralStores
		}
		#expect {
			try Defaults.update([]) { _ in }
		} throws: { error in
			(error as? Defaults.UpdateError)?.kind == .noKeys
		}
	}

	@Test func anUpdateInsideAnUpdateIsRefusedInsteadOfWaitingForever() throws {
		let store = Defaults.InMemoryStore()
		let level = Defaults.Key<Int>("level", default: 0, suite: store)
		let inner = Recorder<Defaults.UpdateError.Kind?>()
		try Defaults.update(level) { value in
			value += 1
			do {
				try Defaults.update(level) { $0 += 100 }
				inner.append(nil)
			} catch {
				inner.append((error as? Defaults.UpdateError)?.kind)
			}
		}
		#expect(inner.values == [.nested])
		#expect(store[level] == 1)
	}

	@Test func anObserverMayFlushTheFileStoreItsUpdateHolds() throws {
		let folder = try TemporaryDirectory()
		let store = Self.fileStore(in: folder)
		let level = Defaults.Key<Int>("level", default: 0, suite: store)
		let note = Defaults.Key<String>("note", default: "", suite: store)
		let observation = Defaults.observe(level, options: []) { change in
			store[note] = "saw \(change.newValue)"
			store.flush()
		}
		defer { observation.invalidate() }
		try Defaults.update(level) { $0 += 1 }
		#expect(store[note] == "saw 1")
		// The note an observer wrote during the update reaches the file too.
		#expect(store.flush())
		#expect(try FileContents.values(of: store.url)["note"] as? String == "saw 1")
	}

	@Test func aValueWithNoStoredFormChangesNothing() throws {
		let store = Defaults.InMemoryStore()
		let other = Defaults.Key<Int>("other", default: 0, suite: store)
		// `nil` inside an array of any values has no stored form.
		let list = Defaults.Key<[Defaults.AnySerializable]>("list", default: [], suite: store)
		#expect {
			try Defaults.update([other, list]) { transaction in
				transaction[other] = 5
				transaction[list] = [1, nil]
			}
		} throws: { error in
			(error as? Defaults.UpdateError)?.kind == .encodingFailed
		}
		#expect(store[other] == 0)
		#expect(store.storedKeys().isEmpty)
	}

	@Test func aStoredValueThatDoesNotDecodeIsLeftAsItIsAndTheUpdateSaysWhy() async throws {
		let store = try Defaults.InMemoryStore(values: ["width": "wide"])
		let width = Defaults.Key<Int>("width", default: 10, suite: store)
		let heard = Recorder<Int>()
		let observation = Defaults.observe(width, options: []) { heard.append($0.newValue) }
		defer { observation.invalidate() }
		let isUndecodable = { (error: any Error) in
			guard let error = error as? Defaults.UpdateError, error.kind == .undecodableValue else {
				return false
			}
			return error.message.contains("'width'") && error.message.contains("wide")
		}
		#expect { try Defaults.update(width) { $0 += 1 } } throws: { isUndecodable($0) }
		await #expect { try await Defaults.update(width) { $0 += 1 } } throws: { isUndecodable($0) }
		#expect(store.storedValue(forKey: "width") as? String == "wide")
		#expect(heard.values.isEmpty)
	}

	@Test func theAsyncFormUpdatesLikeTheSynchronousOne() async throws {
		let store = Defaults.InMemoryStore()
		let sessions = Defaults.Key<Int>("sessions", default: 0, suite: store)
		let other = Defaults.Key<Int>("other", default: 0, suite: store)
		#expect(try await Defaults.update(sessions) { $0 += 2 } == 2)
		try await Defaults.update([sessions, other]) { transaction in
			transaction[other] = transaction[sessions]
		}
		try await Defaults.update([sessions]) { $0[sessions] += 1 }
		#expect(store[sessions] == 3 && store[other] == 2)
	}
}

/// Reads a settings file as it is on disk.
enum FileContents {
	static func values(of url: URL) throws -> [String: Any] {
		let parsed = try PropertyListSerialization.propertyList(from: Data(contentsOf: url), format: nil)
		return try #require(parsed as? [String: Any])
	}
}
