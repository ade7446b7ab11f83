import Foundation

/// Settings files built to break readers: each once crashed or hung a process that opened it, or is a shape a
/// reader must bound (cycles, fan-out, depth, huge counts). Shared by the tests and the fuzzing child process.
public enum HostileFiles {
	/// An offset-table entry of 2^63 or more, which trapped in `Int(UInt64)` before the file could be moved aside.
	public static let hugeOffset = bytes(
		hex: "62706c6973743030d10102516b13000000000000000500000000000000088000000000000000000000000000000c"
			+ "0000000000000801000000000000000300000000000000000000000000000016")

	/// A set inside the top dictionary: Foundation's binary parser segfaulted on it.
	public static let setInside = bytes(
		hex: "62706c6973743030d10102516bc103130000000000000001080b0d0f0000000000000101000000000000000400"
			+ "000000000000000000000000000018")

	/// A date whose time interval is NaN: describing it trapped inside Foundation.
	public static let nanDate = bytes(
		hex: "62706c6973743030d10102516e337ff8000000000000080b0d0000000000000101000000000000000300000000"
			+ "000000000000000000000016")

	/// 30 arrays, each holding the next one twice: 2^30 objects once shared references are expanded.
	public static var sharedFanOut: Data {
		var builder = BinaryPropertyListBuilder()
		let arrays = 30
		// Objects: 0 the top dictionary, 1 its key, 2…31 the arrays, 32 the integer.
		builder.add([0xD1, 1, 2])
		builder.add([0x51, UInt8(ascii: "k")])
		for index in 0..<arrays {
			let next = UInt8(index == arrays - 1 ? 2 + arrays : 3 + index)
			builder.add([0xA2, next, next])
		}
		builder.add([0x10, 1])
		return builder.finish()
	}

	/// An array that holds itself.
	public static var selfReference: Data {
		var builder = BinaryPropertyListBuilder()
		builder.add([0xD1, 1, 2])
		builder.add([0x51, UInt8(ascii: "k")])
		builder.add([0xA1, 2])
		return builder.finish()
	}

	/// Two arrays that hold each other.
	public static var cycle: Data {
		var builder = BinaryPropertyListBuilder()
		builder.add([0xD1, 1, 2])
		builder.add([0x51, UInt8(ascii: "k")])
		builder.add([0xA1, 3])
		builder.add([0xA1, 2])
		return builder.finish()
	}

	/// A string that claims far more bytes than the file has.
	public static var hugeCount: Data {
		var builder = BinaryPropertyListBuilder()
		builder.add([0xD1, 1, 2])
		builder.add([0x51, UInt8(ascii: "k")])
		builder.add([0x5F, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x41])
		return builder.finish()
	}

	/// A UTF-16 string holding a lone surrogate, which Foundation turns into U+FFFD.
	public static var loneSurrogate: Data {
		var builder = BinaryPropertyListBuilder()
		builder.add([0xD1, 1, 2])
		builder.add([0x51, UInt8(ascii: "k")])
		builder.add([0x61, 0xD8, 0x00])
		return builder.finish()
	}

	/// Arrays nested `depth` deep under the key `k`, in binary form.
	public static func nestedBinary(depth: Int) -> Data {
		var builder = BinaryPropertyListBuilder(referenceSize: 2)
		builder.add([0xD1, 0, 1, 0, 2])
		builder.add([0x51, UInt8(ascii: "k")])
		for index in 0..<depth {
			let child = UInt16(index == depth - 1 ? 2 + depth : 3 + index)
			builder.add([0xA1, UInt8(child >> 8), UInt8(child & 0xFF)])
		}
		builder.add([0x10, 1])
		return builder.finish()
	}

	/// Arrays nested `depth` deep under the key `k`, in XML.
	public static func nestedXML(depth: Int) -> Data {
		let inner =
			String(repeating: "<array>", count: depth) + "<integer>1</integer>"
			+ String(repeating: "</array>", count: depth)
		return Data(
			("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>k</key>" + inner
				+ "</dict></plist>").utf8)
	}

	/// Arrays nested `depth` deep under the key `k`, in OpenStep text.
	public static func nestedOpenStep(depth: Int) -> Data {
		Data(
			("{ k = " + String(repeating: "(", count: depth) + "1" + String(repeating: ")", count: depth) + "; }").utf8)
	}

	/// Every hand-made hostile file, named.
	public static var all: [(name: String, data: Data)] {
		[
			("huge offset", hugeOffset), ("set inside", setInside), ("NaN date", nanDate),
			("shared fan-out", sharedFanOut), ("self reference", selfReference), ("cycle", cycle),
			("huge count", hugeCount), ("lone surrogate", loneSurrogate),
			("binary nested 300", nestedBinary(depth: 300)), ("binary nested 20000", nestedBinary(depth: 20_000)),
			("XML nested 600", nestedXML(depth: 600)), ("XML nested 100000", nestedXML(depth: 100_000)),
			("OpenStep nested 100000", nestedOpenStep(depth: 100_000)),
			("OpenStep unclosed", Data("{ a = 1".utf8)), ("OpenStep missing semicolon", Data("{ a = 1 }".utf8)),
		]
	}

	/// The bytes of a hex string.
	public static func bytes(hex: String) -> Data {
		var data = Data()
		var characters = hex.makeIterator()
		while let high = characters.next(), let low = characters.next() {
			data.append(UInt8(String([high, low]), radix: 16)!)
		}
		return data
	}
}

/// Lays out a binary property list from raw objects: each object's bytes, references by index.
public struct BinaryPropertyListBuilder {
	private var body: [UInt8] = Array("bplist00".utf8)
	private var offsets: [Int] = []
	private let referenceSize: UInt8

	/// A builder whose objects refer to each other with `referenceSize`-byte indices.
	public init(referenceSize: UInt8 = 1) {
		self.referenceSize = referenceSize
	}

	/// Appends an object; the first one added is the top object.
	public mutating func add(_ object: [UInt8]) {
		offsets.append(body.count)
		body += object
	}

	/// The file: objects, a 4-byte offset table, and the trailer.
	public func finish() -> Data {
		var bytes = body
		let table = bytes.count
		for offset in offsets {
			bytes += withUnsafeBytes(of: UInt32(offset).bigEndian, Array.init)
		}
		bytes += [0, 0, 0, 0, 0, 0, 4, referenceSize]
		bytes += withUnsafeBytes(of: UInt64(offsets.count).bigEndian, Array.init)
		bytes += withUnsafeBytes(of: UInt64(0).bigEndian, Array.init)
		bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
		return Data(bytes)
	}
}
