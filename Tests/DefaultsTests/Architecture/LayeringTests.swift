import Foundation
import Testing

/// The layers of Docs/Design.md, checked in the source: a lower layer names nothing of the layers above it.
///
/// Storage knows property-list values and the store seam only; serialization sits above it and knows neither keys
/// nor observation. (Observation's public API takes keys of `Serializable` values, so it names both; what it must not
/// do, be in the write path, is checked by the write path living in Keys/Store+Commit.swift.) A name from a higher
/// layer in a lower layer's code, comments aside, fails.
@Suite struct LayeringTests {
	static let sources = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
		.deletingLastPathComponent().deletingLastPathComponent().appending(path: "Sources/Defaults")

	/// Names that belong to each layer, as they appear in code.
	static let keysLayer = [
		"commit(", "Defaults.Key<", "DecodedValueCache", "DecodingFailures", "CommitTaps", "KeyReadCache",
		"KeyNameRules",
		"DynamicDefault",
	]
	static let serializationLayer = [
		"Serializable", "Bridge", "StoredForm", "BridgeDiagnosis", "StableOrder", "NSKeyedArchiver",
	]
	static let observationLayer = ["ChangeHub", "ChangeSubscription", "StoredChange", "Defaults.observe"]

	/// The code of every Swift file in `folder`, without comments.
	static func code(in folder: String) throws -> [(file: String, lines: [String])] {
		let folderURL = sources.appending(path: folder)
		let files = try FileManager.default.contentsOfDirectory(atPath: folderURL.path).filter {
			$0.hasSuffix(".swift")
		}
		#expect(!files.isEmpty, "no Swift files in \(folderURL.path)")
		return try files.sorted().map { file in
			let text = try String(contentsOf: folderURL.appending(path: file), encoding: .utf8)
			let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
				// A line's comment, whole-line or trailing (`//` inside a string literal is rare enough in this code).
				String(line.range(of: "//").map { line[..<$0.lowerBound] } ?? line[...])
			}
			return (file, lines)
		}
	}

	static func violations(in folder: String, naming names: [String]) throws -> [String] {
		try code(in: folder).flatMap { file, lines in
			lines.enumerated().flatMap { index, line in
				names.filter { line.contains($0) }.map { "\(folder)/\(file):\(index + 1) names \($0)" }
			}
		}
	}

	@Test func storageNamesNothingOfTheLayersAboveIt() throws {
		let found = try Self.violations(
			in: "Storage", naming: Self.keysLayer + Self.serializationLayer + Self.observationLayer)
		#expect(found.isEmpty, "\(found.joined(separator: "\n"))")
	}

	@Test func serializationNamesNothingOfKeysOrObservation() throws {
		let found = try Self.violations(in: "Serialization", naming: Self.keysLayer + Self.observationLayer)
		#expect(found.isEmpty, "\(found.joined(separator: "\n"))")
	}
}
