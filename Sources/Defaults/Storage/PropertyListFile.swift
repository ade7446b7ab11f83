import Foundation

/// The one reader of settings files: turns a file's bytes into its normalised values, or says precisely why not.
///
/// The file store and the `defaults` command both read through it, so a file that one of them refuses the other
/// refuses too. Binary files are judged by this package's own reader alone: Foundation's binary parser crashes on
/// some malformed files (sets of unhashable objects) and expands shared objects without bound, and a crash at
/// launch on the app's own settings file would repeat at every launch. OpenStep text is parsed here too, quietly
/// (Foundation's text parser prints CoreFoundation log lines on failure) and with the nesting limit. XML goes to
/// Foundation, which refuses entities and stops at its own depth limit, and its result is normalised with the
/// package's limit.
package enum PropertyListFile {
	/// Why a file's bytes are not a settings file: a sentence fragment such as "it is not a property list (…)".
	package struct Error: Swift.Error, Sendable, CustomStringConvertible {
		package let description: String

		init(_ description: String) {
			self.description = description
		}
	}

	/// The values of a settings file: a property list with a dictionary at the top.
	///
	/// - Throws: ``Error`` for bytes that are not such a file, for values nested deeper than
	///   ``Defaults/PropertyList/maximumDepth``, and for anything this package would not write back exactly.
	package static func decode(_ data: Data) throws(Error) -> [String: Any] {
		let top = try decodeValue(data, isFileTop: true)
		guard let values = top as? [String: Any] else {
			throw Error("its top level is a \(type(of: top)), not a dictionary")
		}
		return values
	}

	/// The normalised value of a property list of any format, with any value at the top: for property lists given
	/// as text, such as a `-key value` launch argument.
	package static func decodeValue(_ data: Data) throws(Error) -> Any {
		try decodeValue(data, isFileTop: false)
	}

	private static func decodeValue(_ data: Data, isFileTop: Bool) throws(Error) -> Any {
		let top: Any
		if BinaryPropertyList.isBinary(data) {
			do {
				top = try BinaryPropertyList.decode(data)
			} catch {
				throw Error("it is a binary property list this package cannot read safely (\(error))")
			}
		} else if OpenStepPropertyList.looksLikeXML(data) {
			let parsed: Any
			do {
				parsed = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
			} catch {
				throw Error("it is not a property list (\(parseReason(error)))")
			}
			do {
				// A file's top-level dictionary is not part of any value: values under it may nest the full depth.
				top = try Defaults.PropertyList.normalize(parsed, depth: isFileTop ? -1 : 0)
			} catch {
				throw Error("it holds a value this package cannot store (\(error.description))")
			}
		} else {
			do {
				top = try OpenStepPropertyList.parse(data)
			} catch {
				throw Error("it is not a property list (\(error.description))")
			}
		}
		return top
	}

	private static func parseReason(_ error: Swift.Error) -> String {
		let nsError = error as NSError
		return nsError.userInfo[NSDebugDescriptionErrorKey] as? String ?? nsError.localizedDescription
	}
}
