import Foundation

/// A table of a flush's that lives as long as the flush: from 128 KiB on, mapped from the system and unmapped when the
/// table goes, instead of taken from `malloc`.
///
/// A flush of a large store runs on a Dispatch thread, whose `malloc` arena is its own, and glibc keeps what such an
/// arena freed at its top resident (`malloc_trim` gives back the main arena's top only): a store that wrote 100,000
/// keys and flushed kept up to twice its values' memory in the arenas of the threads its flushes ran on (issue 32).
/// A table mapped for the flush leaves nothing behind.
final class TemporaryTable<Element> {
	private let start: UnsafeMutablePointer<Element>
	let capacity: Int
	private(set) var count = 0
	/// The mapped byte count, else 0 (the table came from `malloc`).
	private let mappedByteCount: Int

	/// Tables of this many bytes or more are mapped: glibc's first threshold for a mapping of its own.
	static var mappingThreshold: Int { 128 * 1024 }

	init(capacity: Int) {
		let capacity = max(capacity, 1)
		self.capacity = capacity
		let byteCount = capacity * MemoryLayout<Element>.stride
		if byteCount >= Self.mappingThreshold,
			let mapped = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
			mapped != MAP_FAILED
		{
			start = mapped.bindMemory(to: Element.self, capacity: capacity)
			mappedByteCount = byteCount
		} else {
			start = .allocate(capacity: capacity)
			mappedByteCount = 0
		}
	}

	deinit {
		start.deinitialize(count: count)
		if mappedByteCount > 0 {
			munmap(start, mappedByteCount)
		} else {
			start.deallocate()
		}
	}

	func append(_ element: Element) {
		precondition(count < capacity, "a temporary table is full")
		(start + count).initialize(to: element)
		count += 1
	}

	subscript(index: Int) -> Element {
		precondition(index >= 0 && index < count, "out of a temporary table's bounds")
		return start[index]
	}

	/// The elements, to sort or read in place; valid while the table lives.
	var elements: UnsafeMutableBufferPointer<Element> {
		UnsafeMutableBufferPointer(start: start, count: count)
	}
}

/// A store's values as a flush writes them: every key and value, in the order of their keys, in temporary tables
/// (``TemporaryTable``) rather than in a copy of the store's dictionary, which `malloc` would serve from the flushing
/// thread's arena.
final class ValueSnapshot {
	private let keyTable: TemporaryTable<String>
	private let valueTable: TemporaryTable<Any>
	/// Indices into the two tables, in the order of the keys.
	private let order: TemporaryTable<UInt32>

	/// Takes the keys and values of `values` and lets go of the dictionary (sets `values` to `nil`) before it sorts
	/// them: taken from memory under its lock, the dictionary shares memory's storage, and a write while it is held
	/// would copy every value on the writer's thread.
	init(taking values: inout [String: Any]?) {
		let count = values?.count ?? 0
		keyTable = TemporaryTable(capacity: count)
		valueTable = TemporaryTable(capacity: count)
		order = TemporaryTable(capacity: count)
		if let taken = values {
			for (key, value) in taken {
				order.append(UInt32(keyTable.count))
				keyTable.append(key)
				valueTable.append(value)
			}
		}
		values = nil
		// The keys alone are compared, in place: no value is copied by the sort.
		let keys = keyTable.elements
		var indices = order.elements
		indices.sort { keys[Int($0)] < keys[Int($1)] }
	}

	var count: Int { keyTable.count }

	/// The `index`th key in their order.
	func key(at index: Int) -> String {
		keyTable.elements[Int(order.elements[index])]
	}

	/// The value of the `index`th key in their order.
	func value(at index: Int) -> Any {
		valueTable.elements[Int(order.elements[index])]
	}

	/// The values as a dictionary, for the steps that merge them with a file read again.
	func dictionary() -> [String: Any] {
		var values: [String: Any] = [:]
		values.reserveCapacity(count)
		for index in 0..<count {
			values[keyTable.elements[index]] = valueTable.elements[index]
		}
		return values
	}
}
