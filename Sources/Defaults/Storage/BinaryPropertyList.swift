import Foundation

/// Reads and writes binary property lists (`bplist00`) of normalised values, directly.
///
/// Foundation's `PropertyListSerialization` on Linux takes about 60 ms to write and 40 ms to read and normalise a
/// 10,000-key file, most of it bridging every value to and from `NSObject`s; this codec works on Swift values and
/// bytes only. Its output is a standard binary property list that Foundation and `plutil` read. Input it does not
/// understand (other versions, UIDs, sets) makes it throw, and the file is refused: Foundation's binary parser is
/// never handed a file this reader refused (it crashes on some and expands shared objects without bound).
enum BinaryPropertyList {
	struct Error: Swift.Error, CustomStringConvertible {
		let description: String
	}

	/// The values would make a list of more than a settings file may hold. Unlike a write that fails, trying again
	/// cannot succeed until the values change.
	struct TooLarge: Swift.Error, CustomStringConvertible {
		let description: String
	}

	private static let header = Array("bplist00".utf8)
	private static let trailerSize = 32

	/// Whether `data` starts like a binary property list.
	static func isBinary(_ data: Data) -> Bool {
		data.starts(with: header)
	}

	// MARK: Writing

	/// Encodes a normalised property-list value (see ``Defaults/PropertyList``); dictionary keys are sorted, so that
	/// the same values always give the same bytes.
	static func encode(_ root: Any) throws -> Data {
		var writer = Writer(objectCount: try objectCount(root))
		let top = try writer.write(root)
		return writer.finish(top: top)
	}

	/// Encodes `snapshot` as a dictionary, as ``encode(_:)`` encodes the same values (the same bytes), handing the
	/// bytes to `write` in pieces of about 64 KiB as they are made instead of building the whole list: a flush of a
	/// large store writes its file this way, with no buffer of the file's size (issue 32's memory per key).
	///
	/// - Throws: ``Error`` for a value that is not a normalised property-list value, ``TooLarge`` once the list would
	///   exceed `limit` bytes (nothing more is handed to `write` then), and whatever `write` throws.
	static func encode(
		_ snapshot: ValueSnapshot, limit: Int, to write: (UnsafeRawBufferPointer) throws -> Void
	) throws {
		var objectCount = 1 + snapshot.count
		for index in 0..<snapshot.count {
			objectCount += try Self.objectCount(snapshot.value(at: index))
		}
		var writer = Writer(objectCount: objectCount, reserving: 2 * pieceSize)
		func drain(_ writer: inout Writer) throws {
			guard writer.bytes.count >= pieceSize else {
				return
			}
			try writer.drain(limit: limit, to: write)
		}
		// Children first, as `write` orders a dictionary's: the keys in order, then the values.
		for index in 0..<snapshot.count {
			_ = try writer.write(snapshot.key(at: index))
			try drain(&writer)
		}
		let values = TemporaryTable<Int>(capacity: snapshot.count)
		for index in 0..<snapshot.count {
			values.append(try writer.write(snapshot.value(at: index)))
			try drain(&writer)
		}
		let firstKey = 0
		let top = writer.beginObject()
		writer.appendMarker(0xD0, count: snapshot.count)
		for index in 0..<snapshot.count {
			writer.append(UInt64(firstKey + index), size: writer.referenceSize)
			try drain(&writer)
		}
		for index in 0..<snapshot.count {
			writer.append(UInt64(values[index]), size: writer.referenceSize)
			try drain(&writer)
		}
		try writer.finish(top: top, limit: limit, to: write)
	}

	/// How many bytes the streaming encoder gathers before it hands them on.
	private static var pieceSize: Int { 64 * 1024 }

	private static func objectCount(_ value: Any) throws -> Int {
		switch value {
		case let array as [Any]:
			return try array.reduce(1) { $0 + (try objectCount($1)) }
		case let dictionary as [String: Any]:
			return try dictionary.values.reduce(1 + dictionary.count) { $0 + (try objectCount($1)) }
		default:
			return 1
		}
	}

	private struct Writer {
		var bytes: [UInt8] = []
		/// Bytes already handed on (the streaming encoder's), before those of `bytes`.
		var handedOn = 0
		/// Each object's offset, by index.
		let offsets: TemporaryTable<Int>
		let referenceSize: Int

		init(objectCount: Int, reserving byteCount: Int? = nil) {
			referenceSize = Writer.byteCount(for: UInt64(objectCount))
			bytes.reserveCapacity(byteCount ?? objectCount * 16)
			offsets = TemporaryTable(capacity: objectCount)
			bytes += BinaryPropertyList.header
		}

		/// The offset of the next byte written.
		var position: Int { handedOn + bytes.count }

		/// Starts an object whose bytes the caller appends; returns its index.
		mutating func beginObject() -> Int {
			offsets.append(position)
			return offsets.count - 1
		}

		/// Hands the bytes gathered to `write`, unless the list would exceed `limit` bytes.
		mutating func drain(limit: Int, to write: (UnsafeRawBufferPointer) throws -> Void) throws {
			guard position <= limit else {
				throw TooLarge(
					description: "the settings take more than \(limit >> 20) MiB, the most a settings file may hold")
			}
			try bytes.withUnsafeBytes { try write($0) }
			handedOn += bytes.count
			bytes.removeAll(keepingCapacity: true)
		}

		static func byteCount(for value: UInt64) -> Int {
			value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
		}

		mutating func append(_ value: UInt64, size: Int) {
			for shift in stride(from: (size - 1) * 8, through: 0, by: -8) {
				bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
			}
		}

		/// A marker with a count: in its low nibble when it fits, else in an integer object that follows.
		mutating func appendMarker(_ marker: UInt8, count: Int) {
			if count < 15 {
				bytes.append(marker | UInt8(count))
			} else {
				bytes.append(marker | 0x0F)
				appendInteger(count)
			}
		}

		mutating func appendInteger(_ value: Int) {
			// Negative numbers are always eight bytes: readers take shorter integers as unsigned.
			let size = value < 0 ? 8 : Writer.byteCount(for: UInt64(value))
			bytes.append(0x10 | UInt8(size.trailingZeroBitCount))
			append(UInt64(bitPattern: Int64(value)), size: size)
		}

		/// Children first, so that a container knows the indices it refers to; returns the value's object index.
		mutating func write(_ value: Any) throws -> Int {
			switch value {
			case let array as [Any]:
				let children = try array.map { try write($0) }
				return object {
					$0.appendMarker(0xA0, count: children.count)
					for child in children { $0.append(UInt64(child), size: $0.referenceSize) }
				}
			case let dictionary as [String: Any]:
				let keys = dictionary.keys.sorted()
				let keyIndices = try keys.map { try write($0) }
				let valueIndices = try keys.map { try write(dictionary[$0]!) }
				return object {
					$0.appendMarker(0xD0, count: keys.count)
					for index in keyIndices { $0.append(UInt64(index), size: $0.referenceSize) }
					for index in valueIndices { $0.append(UInt64(index), size: $0.referenceSize) }
				}
			default:
				return try writeScalar(value)
			}
		}

		private mutating func writeScalar(_ value: Any) throws -> Int {
			switch value {
			case let value as Bool:
				return object { $0.bytes.append(value ? 0x09 : 0x08) }
			case let value as Int:
				return object { $0.appendInteger(value) }
			case let value as UInt64:
				// Above `Int.max`: a 16-byte integer, which readers take as unsigned.
				return object {
					$0.bytes.append(0x14)
					$0.append(0, size: 8)
					$0.append(value, size: 8)
				}
			case let value as Double:
				return object {
					$0.bytes.append(0x23)
					$0.append(value.bitPattern, size: 8)
				}
			case let value as Date:
				return object {
					$0.bytes.append(0x33)
					$0.append(value.timeIntervalSinceReferenceDate.bitPattern, size: 8)
				}
			case let value as Data:
				return object {
					$0.appendMarker(0x40, count: value.count)
					$0.bytes += value
				}
			case let value as String:
				let utf8 = value.utf8
				if utf8.allSatisfy({ $0 < 0x80 }) {
					return object {
						$0.appendMarker(0x50, count: utf8.count)
						$0.bytes += utf8
					}
				}
				return object {
					let units = Array(value.utf16)
					$0.appendMarker(0x60, count: units.count)
					for unit in units { $0.append(UInt64(unit), size: 2) }
				}
			default:
				throw Error(description: "a value of type \(type(of: value)) is not a normalised property-list value")
			}
		}

		private mutating func object(_ body: (inout Writer) -> Void) -> Int {
			let index = beginObject()
			body(&self)
			return index
		}

		mutating func finish(top: Int) -> Data {
			let tableOffset = position
			let offsetSize = Writer.byteCount(for: UInt64(tableOffset))
			for index in 0..<offsets.count { append(UInt64(offsets[index]), size: offsetSize) }
			appendTrailer(top: top, tableOffset: tableOffset, offsetSize: offsetSize)
			return Data(bytes)
		}

		/// Appends the offset table and the trailer, handing the bytes to `write` as they grow.
		mutating func finish(
			top: Int, limit: Int, to write: (UnsafeRawBufferPointer) throws -> Void
		) throws {
			let tableOffset = position
			let offsetSize = Writer.byteCount(for: UInt64(tableOffset))
			for index in 0..<offsets.count {
				append(UInt64(offsets[index]), size: offsetSize)
				if bytes.count >= BinaryPropertyList.pieceSize {
					try drain(limit: limit, to: write)
				}
			}
			appendTrailer(top: top, tableOffset: tableOffset, offsetSize: offsetSize)
			try drain(limit: limit, to: write)
		}

		private mutating func appendTrailer(top: Int, tableOffset: Int, offsetSize: Int) {
			bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
			append(UInt64(offsets.count), size: 8)
			append(UInt64(top), size: 8)
			append(UInt64(tableOffset), size: 8)
		}
	}

	// MARK: Reading

	/// Decodes a binary property list into normalised values: `Bool`, `Int` (`UInt64` above `Int.max`), `Double`,
	/// `String`, `Data`, `Date`, `[Any]` and `[String: Any]`.
	///
	/// - Throws: ``Error`` for anything malformed or outside that set; it never reads out of bounds.
	///
	/// With `allowingUIDs`, the object references of a keyed archive read as `["CF$UID": index]`, the form XML
	/// property lists spell them in; settings files never hold them.
	static func decode(_ data: Data, allowingUIDs: Bool = false) throws -> Any {
		try data.withUnsafeBytes { bytes in
			var reader = try Reader(bytes: bytes)
			reader.allowsUIDs = allowingUIDs
			return try reader.readTop()
		}
	}

	private struct Reader {
		let bytes: UnsafeRawBufferPointer
		let offsetSize: Int
		let referenceSize: Int
		let objectCount: Int
		let topObject: Int
		let tableOffset: Int
		var allowsUIDs = false

		init(bytes: UnsafeRawBufferPointer) throws {
			self.bytes = bytes
			guard bytes.count >= header.count + trailerSize, bytes.starts(with: header) else {
				throw Error(description: "not a bplist00 file")
			}
			let trailer = bytes.count - trailerSize
			offsetSize = Int(bytes[trailer + 6])
			referenceSize = Int(bytes[trailer + 7])
			let count = Reader.integer(bytes, at: trailer + 8, size: 8)
			let top = Reader.integer(bytes, at: trailer + 16, size: 8)
			let table = Reader.integer(bytes, at: trailer + 24, size: 8)
			guard [1, 2, 4, 8].contains(offsetSize), [1, 2, 4, 8].contains(referenceSize),
				count > 0, top < count, table >= UInt64(header.count), table < UInt64(trailer),
				count <= UInt64(trailer) / UInt64(offsetSize),
				table + count * UInt64(offsetSize) <= UInt64(trailer)
			else {
				throw Error(description: "the trailer is inconsistent")
			}
			objectCount = Int(count)
			topObject = Int(top)
			tableOffset = Int(table)
		}

		static func integer(_ bytes: UnsafeRawBufferPointer, at offset: Int, size: Int) -> UInt64 {
			var value: UInt64 = 0
			for index in offset..<offset + size {
				value = value << 8 | UInt64(bytes[index])
			}
			return value
		}

		func readTop() throws -> Any {
			// Shared objects are read once per reference; the budget stops a file whose references fan out
			// exponentially from taking forever. Real files decode to far fewer objects than they have bytes.
			var budget = max(4_096, bytes.count * 4)
			return try readObject(topObject, depth: 0, budget: &budget)
		}

		private func checkedRange(_ start: Int, _ length: Int) throws -> Range<Int> {
			guard start >= 0, length >= 0, start <= tableOffset, length <= tableOffset - start else {
				throw Error(description: "an object runs past the end of the object area")
			}
			return start..<start + length
		}

		private func reference(at position: Int) throws -> Int {
			let range = try checkedRange(position, referenceSize)
			let index = Reader.integer(bytes, at: range.lowerBound, size: referenceSize)
			guard index < UInt64(objectCount) else {
				throw Error(description: "a reference points past the last object")
			}
			return Int(index)
		}

		/// The count in a marker's low nibble, or in the integer object after it; and where the content starts.
		private func count(marker: UInt8, at offset: Int) throws -> (count: Int, start: Int) {
			let nibble = Int(marker & 0x0F)
			guard nibble == 0x0F else {
				return (nibble, offset + 1)
			}
			let intMarker = bytes[try checkedRange(offset + 1, 1).lowerBound]
			guard intMarker & 0xF0 == 0x10, intMarker & 0x0F <= 3 else {
				throw Error(description: "a count is not an integer")
			}
			let size = 1 << Int(intMarker & 0x0F)
			let range = try checkedRange(offset + 2, size)
			let value = Reader.integer(bytes, at: range.lowerBound, size: size)
			guard value <= UInt64(tableOffset) else {
				throw Error(description: "a count is larger than the file")
			}
			return (Int(value), range.upperBound)
		}

		private func readObject(_ index: Int, depth: Int, budget: inout Int) throws -> Any {
			budget -= 1
			guard budget >= 0 else {
				throw Error(description: "the objects refer to each other too many times")
			}
			// Every integer read from the file is checked before it becomes an `Int`: an offset of 2^63 or more would
			// trap in the conversion.
			let storedOffset = Reader.integer(bytes, at: tableOffset + index * offsetSize, size: offsetSize)
			guard storedOffset < UInt64(tableOffset) else {
				throw Error(description: "an object's offset points past the object area")
			}
			let offset = Int(storedOffset)
			let marker = bytes[try checkedRange(offset, 1).lowerBound]
			// Containers below the top one count against the one nesting limit of the package; it also ends
			// reference cycles, which a malformed file can hold.
			if marker & 0xF0 == 0xA0 || marker & 0xF0 == 0xD0, depth > Defaults.PropertyList.maximumDepth {
				throw Error(description: "containers are nested more than \(Defaults.PropertyList.maximumDepth) deep")
			}
			switch marker {
			case 0x08: return false
			case 0x09: return true
			case 0x10...0x13:
				let size = 1 << Int(marker & 0x0F)
				let value = Reader.integer(bytes, at: try checkedRange(offset + 1, size).lowerBound, size: size)
				return size == 8 ? Int(Int64(bitPattern: value)) : Int(value)
			case 0x14:
				let range = try checkedRange(offset + 1, 16)
				let high = Reader.integer(bytes, at: range.lowerBound, size: 8)
				let low = Reader.integer(bytes, at: range.lowerBound + 8, size: 8)
				guard high == 0 else {
					throw Error(description: "an integer does not fit in 64 bits")
				}
				return Int(exactly: low) ?? low
			case 0x22:
				let range = try checkedRange(offset + 1, 4)
				return Double(Float(bitPattern: UInt32(Reader.integer(bytes, at: range.lowerBound, size: 4))))
			case 0x23:
				let range = try checkedRange(offset + 1, 8)
				return Double(bitPattern: Reader.integer(bytes, at: range.lowerBound, size: 8))
			case 0x33:
				let range = try checkedRange(offset + 1, 8)
				let seconds = Double(bitPattern: Reader.integer(bytes, at: range.lowerBound, size: 8))
				return Date(timeIntervalSinceReferenceDate: seconds)
			case 0x80...0x8F where allowsUIDs:
				let size = Int(marker & 0x0F) + 1
				guard size <= 4 else {
					throw Error(description: "a keyed-archive reference is wider than 4 bytes")
				}
				let range = try checkedRange(offset + 1, size)
				return ["CF$UID": Int(Reader.integer(bytes, at: range.lowerBound, size: size))]
			case 0x40...0x4F:
				let (length, start) = try count(marker: marker, at: offset)
				return Data(bytes[try checkedRange(start, length)])
			case 0x50...0x5F:
				let (length, start) = try count(marker: marker, at: offset)
				// Strict, so that a file is never rewritten with replacement characters where its bytes were.
				guard let string = String(validating: bytes[try checkedRange(start, length)], as: UTF8.self) else {
					throw Error(description: "a string is not valid UTF-8")
				}
				return string
			case 0x60...0x6F:
				let (length, start) = try count(marker: marker, at: offset)
				let range = try checkedRange(start, length * 2)
				var units = [UInt16]()
				units.reserveCapacity(length)
				for position in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
					units.append(UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1]))
				}
				guard let string = String(validating: units, as: UTF16.self) else {
					throw Error(description: "a string is not valid UTF-16")
				}
				return string
			case 0xA0...0xAF:
				let (length, start) = try count(marker: marker, at: offset)
				_ = try checkedRange(start, length * referenceSize)
				var array = [Any]()
				array.reserveCapacity(length)
				for position in 0..<length {
					array.append(
						try readObject(
							try reference(at: start + position * referenceSize), depth: depth + 1, budget: &budget))
				}
				return array
			case 0xD0...0xDF:
				let (length, start) = try count(marker: marker, at: offset)
				_ = try checkedRange(start, 2 * length * referenceSize)
				var dictionary = [String: Any](minimumCapacity: length)
				for position in 0..<length {
					let key = try readObject(
						try reference(at: start + position * referenceSize), depth: depth + 1, budget: &budget)
					guard let key = key as? String else {
						throw Error(description: "a dictionary key is a \(type(of: key)), not a string")
					}
					let valuePosition = start + (length + position) * referenceSize
					dictionary[key] = try readObject(
						try reference(at: valuePosition), depth: depth + 1, budget: &budget)
				}
				return dictionary
			default:
				throw Error(description: String(format: "object marker 0x%02x is not a property-list value", marker))
			}
		}
	}
}
