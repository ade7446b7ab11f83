import Foundation
import Testing

/// Every built-in bridge decodes a stored value once into the value or the reason it does not decode, in the file that
/// declares it: adding a bridge is one file, and a bridge that forgets its diagnosis fails here instead of giving users a
/// vague sentence.
@Suite struct BuiltInBridgeDiagnosisTests {
	/// Bridges that accept every stored value, so that there is nothing to diagnose.
	static let acceptingEverything: Set<String> = ["AnySerializableBridge"]

	@Test func eachBuiltInBridgeConformsToDecodingBridgeInItsOwnFile() throws {
		let folder = LayeringTests.sources.appending(path: "Serialization")
		var bridges: [String] = []
		var missing: [String] = []
		for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
			let text = try String(contentsOf: folder.appending(path: file), encoding: .utf8)
			for match in text.matches(of: /(?m)^\s*(?:public\s+)?struct\s+(\w+Bridge)\b/) {
				let name = String(match.output.1)
				bridges.append(name)
				let conformance = "extension Defaults.\(name): DecodingBridge"
				let internalConformance = "extension \(name): DecodingBridge"
				if !Self.acceptingEverything.contains(name), !text.contains(conformance),
					!text.contains(internalConformance)
				{
					missing.append("\(file): \(name)")
				}
			}
		}
		#expect(bridges.count >= 15, "found only \(bridges)")
		#expect(missing.isEmpty, "bridges without a diagnosis in their own file: \(missing)")
	}
}
