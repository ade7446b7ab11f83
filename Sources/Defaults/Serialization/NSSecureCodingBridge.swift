import Foundation

extension Defaults {
	/// Stores an `NSSecureCoding` object as a keyed archive (`Data`), with secure coding required.
	///
	/// ```swift
	/// final class Bookmark: NSObject, NSSecureCoding, Defaults.Serializable { … }
	/// ```
	///
	/// Before unarchiving, the bridge checks that the archive's root object is of the expected class, and it
	/// unarchives with errors recorded rather than trapping: Foundation on Linux crashes, rather than throws, when
	/// asked to unarchive another class, so a stored archive of the wrong class reads as the key's default instead.
	public struct NSSecureCodingBridge<Value: NSObject & NSSecureCoding>: Bridge, @unchecked Sendable {
		/// Returns the keyed archive of `value`, or `nil` if it cannot be archived.
		public func serialize(_ value: Value?) -> Data? {
			guard let value, KeyedArchive.canArchive(Value.self) else {
				return nil
			}
			return try? NSKeyedArchiver.archivedData(withRootObject: value, requiringSecureCoding: true)
		}

		/// Returns the object unarchived from `object`, or `nil` if it is not an archive of a `Value`.
		public func deserialize(_ object: Data?) -> Value? {
			object.flatMap { decode(storedForm: $0).value }
		}

		func decode(storedForm stored: Any) -> DecodeResult<Value> {
			guard let data = stored as? Data else {
				return .failure("a keyed archive is stored as Data, and found \(BridgeDiagnosis.describe(stored))")
			}
			// First, as it reports a class Foundation cannot archive whatever the data.
			let isArchivable = KeyedArchive.canArchive(Value.self)
			guard let className = KeyedArchive.rootClassName(of: data) else {
				return .failure("the data is not a keyed archive")
			}
			guard isArchivable else {
				return .failure(KeyedArchive.notTopLevelMessage(Value.self))
			}
			let expected = NSStringFromClass(Value.self)
			guard className == expected else {
				return .failure("the archive holds a \(className), not a \(expected)")
			}
			guard let value = unarchive(data) else {
				return .failure("the \(className) archive did not unarchive with secure coding")
			}
			return .value(value)
		}

		private func unarchive(_ data: Data) -> Value? {
			guard let unarchiver = try? NSKeyedUnarchiver(forReadingFrom: data) else {
				return nil
			}
			// Errors inside the archive are recorded instead of trapping, as `unarchivedObject(ofClass:from:)` does.
			unarchiver.decodingFailurePolicy = .setErrorAndReturn
			unarchiver.requiresSecureCoding = true
			defer { unarchiver.finishDecoding() }
			return unarchiver.decodeObject(of: Value.self, forKey: NSKeyedArchiveRootObjectKey)
		}
	}
}

/// Reads a keyed archive's structure without unarchiving it.
enum KeyedArchive {
	/// The class name recorded for the archive's root object, or `nil` if `data` is not a keyed archive.
	static func rootClassName(of data: Data) -> String? {
		guard
			let archive = structure(of: data),
			let objects = archive["$objects"] as? [Any],
			let top = archive["$top"] as? [String: Any],
			let root = top["root"].flatMap(objectIndex),
			objects.indices.contains(root),
			let rootObject = objects[root] as? [String: Any],
			let classIndex = rootObject["$class"].flatMap(objectIndex),
			objects.indices.contains(classIndex),
			let classDescription = objects[classIndex] as? [String: Any]
		else {
			return nil
		}
		return classDescription["$classname"] as? String
	}

	/// The archive's property list. A binary archive is checked by the package's own reader first, and one it refuses
	/// is never handed to Foundation, whose binary parser crashes on some malformed data: a stored value must not be
	/// able to crash the app that reads it.
	private static func structure(of data: Data) -> [String: Any]? {
		if BinaryPropertyList.isBinary(data) {
			return (try? BinaryPropertyList.decode(data, allowingUIDs: true)) as? [String: Any]
		}
		return (try? PropertyListSerialization.propertyList(from: data, format: nil)) as? [String: Any]
	}

	/// The object index that a keyed-archive reference points to: a `CF$UID` dictionary (XML) or Foundation's
	/// opaque UID object (binary).
	private static func objectIndex(_ reference: Any) -> Int? {
		if let dictionary = reference as? [String: Any] {
			return (dictionary["CF$UID"] as? Int) ?? (dictionary["CF$UID"] as? NSNumber)?.intValue
		}
		return FoundationUID.value(reference)
	}
}

extension Defaults.Serializable where Self: NSObject & NSSecureCoding {
	/// ``Defaults/NSSecureCodingBridge``: a keyed archive.
	public static var bridge: Defaults.NSSecureCodingBridge<Self> { .init() }
}

extension Defaults.Serializable where Self: Codable & NSObject & NSSecureCoding {
	/// ``Defaults/TopLevelCodableBridge``: JSON text, unless the type adopts ``Defaults/PreferNSSecureCoding``.
	public static var bridge: Defaults.TopLevelCodableBridge<Self> { .init() }
}

extension Defaults.Serializable where Self: Codable & Defaults.PreferNSSecureCoding {
	/// ``Defaults/NSSecureCodingBridge``: a keyed archive, as ``Defaults/PreferNSSecureCoding`` asks.
	public static var bridge: Defaults.NSSecureCodingBridge<Self> { .init() }
}

// MARK: Decoding once, with the reason a stored value does not decode (beside each bridge's `deserialize`)

extension Defaults.NSSecureCodingBridge: DecodingBridge {}
