import Foundation
import Testing

@testable import Defaults

/// The file store's binary property-list codec, checked against Foundation's in both directions.
@Suite struct BinaryPropertyListTests {
	static var sample: [String: Any] {
		[
			"bool": true, "false": false, "small": 7, "byte": 255, "short": 65_535, "int32": 4_294_967_295,
			"negative": -1, "min": Int.min, "max": Int.max, "huge": UInt64.max, "double": 1.1, "nan": -0.0,
			"ascii": "plain", "unicode": "Grüße 👋", "long": String(repeating: "x", count: 300), "empty": "",
			"data": Data((0..<200).map { UInt8($0) }),
			"date": Date(timeIntervalSinceReferenceDate: 700_000_000.123_456_7),
			"array": [1, "two", [3.0]] as [Any], "dictionary": ["nested": ["deep": true]],
			"many": (0..<40).map { $0 },
		]
	}

	/// Issue 32: a flush writes its file from a snapshot in pieces; the bytes are those of the dictionary's encoding,
	/// over more than one piece, and a list past the limit is refused before it is all handed on.
	@Test func aSnapshotEncodesInPiecesToTheBytesOfItsDictionary() throws {
		var values = Self.sample
		for index in 0..<5_000 {
			values["name\(index)"] = "value \(index)"
			values["list\(index)"] = [index, "x"] as [Any]
		}
		var taken: [String: Any]? = values
		let snapshot = ValueSnapshot(taking: &taken)
		#expect(taken == nil)
		var pieces: [Int] = []
		var bytes = Data()
		try BinaryPropertyList.encode(snapshot, limit: 64 << 20) { piece in
			pieces.append(piece.count)
			bytes.append(contentsOf: piece)
		}
		#expect(pieces.count > 1)
		#expect(bytes == (try BinaryPropertyList.encode(values)))

		var handedOn = 0
		#expect(throws: BinaryPropertyList.TooLarge.self) {
			try BinaryPropertyList.encode(snapshot, limit: 100_000) { handedOn += $0.count }
		}
		#expect(handedOn <= 100_000)
	}

	@Test func aStringThatIsNotValidTextIsRefusedRatherThanRepaired() throws {
		var data = try BinaryPropertyList.encode(["key": "zq"])
		let index = try #require(
			data.indices.first { data[$0] == UInt8(ascii: "z") && data[$0 + 1] == UInt8(ascii: "q") })
		data[index] = 0xFF
		#expect(throws: BinaryPropertyList.Error.self) {
			try BinaryPropertyList.decode(data)
		}
	}

	@Test func foundationReadsWhatTheCodecWrites() throws {
		let data = try BinaryPropertyList.encode(Self.sample)
		var format = PropertyListSerialization.PropertyListFormat.xml
		let parsed = try PropertyListSerialization.propertyList(from: data, format: &format)
		#expect(format == .binary)
		let normalized = try Defaults.PropertyList.normalize(parsed)
		#expect(Defaults.PropertyList.isEqual(normalized, Self.sample))
	}

	@Test func theCodecReadsWhatFoundationWrites() throws {
		let data = try PropertyListSerialization.data(fromPropertyList: Self.sample, format: .binary, options: 0)
		let decoded = try BinaryPropertyList.decode(data)
		#expect(Defaults.PropertyList.isEqual(decoded, Self.sample))
	}

	@Test func valuesRoundTripExactly() throws {
		let decoded = try BinaryPropertyList.decode(try BinaryPropertyList.encode(Self.sample))
		#expect(Defaults.PropertyList.isEqual(decoded, Self.sample))
		let dictionary = try #require(decoded as? [String: Any])
		#expect(dictionary["huge"] as? UInt64 == .max)
		#expect(dictionary["min"] as? Int == .min)
		#expect(dictionary["bool"] as? Bool == true)
	}

	@Test func theSameValuesGiveTheSameBytes() throws {
		#expect(try BinaryPropertyList.encode(Self.sample) == BinaryPropertyList.encode(Self.sample))
	}

	@Test func truncatedAndDamagedFilesThrowWithoutCrashing() throws {
		let data = try BinaryPropertyList.encode(Self.sample)
		for length in stride(from: 0, to: data.count, by: 7) {
			#expect(throws: (any Error).self) { try BinaryPropertyList.decode(data.prefix(length)) }
		}
		var generator = SystemRandomNumberGenerator()
		for _ in 0..<300 {
			var damaged = data
			for _ in 0..<4 {
				damaged[Int.random(in: 8..<damaged.count, using: &generator)] = .random(in: 0...255, using: &generator)
			}
			// Either outcome is fine; reading out of bounds or hanging is not.
			_ = try? BinaryPropertyList.decode(damaged)
		}
	}

	@Test func referenceCyclesThrow() throws {
		// An array (object 0) that holds itself.
		var bytes = Array("bplist00".utf8) + [0xA1, 0x00]
		let tableOffset = bytes.count
		bytes += [8]
		bytes += [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0, 0]
		bytes += [0, 0, 0, 0, 0, 0, 0, UInt8(tableOffset)]
		#expect(throws: BinaryPropertyList.Error.self) { try BinaryPropertyList.decode(Data(bytes)) }
	}
}
