import Foundation

extension Defaults {
	/// The keys of an app, listed once: a schema file beside the settings file that tools such as the `defaults`
	/// command read (each key's type, bridge, default and the structure of its stored form), and the list to reset or
	/// export.
	///
	/// ```swift
	/// extension Defaults {
	/// 	static let catalog = Catalog([Keys.theme, Keys.homepage, Keys.recentFiles])
	/// }
	///
	/// try Defaults.catalog.writeSchema()                   // Settings.schema.plist beside Settings.plist
	/// Defaults.reset(Defaults.catalog.keys)                 // every catalogued key
	/// try Defaults.Snapshot.write(of: Defaults.standardStore, keys: Defaults.catalog.keys, to: exportURL)
	/// ```
	///
	/// A catalog is kept complete by a test: a key is declared in its store when it is first used, so after the
	/// tests that use the app's keys, ``uncataloguedKeys(in:)`` lists those the catalog misses.
	public struct Catalog: Sendable {
		/// The keys, in the order given.
		public let keys: [Keys]

		/// The shapes of the samples given with ``withSample(_:for:)``, by key name.
		private var sampleShapes: [String: StoredShape] = [:]

		/// Creates a catalog of `keys`.
		public init(_ keys: [Keys]) {
			self.keys = keys
		}

		/// The catalog, describing the stored form of `key` by `sample` rather than by the key's default.
		///
		/// The schema describes the structure of each key's stored form, so that the `defaults` command can say which
		/// stored values do not decode as the app reads them: a `Codable` value's JSON fields and their kinds, an
		/// array's elements. It takes that structure from the key's default; give a sample for a key whose default
		/// shows little or nothing of it, such as an optional key (whose default is `nil`) or an empty array:
		///
		/// ```swift
		/// static let catalog = Catalog([Keys.lastWindow, Keys.bookmarks])
		/// 	.withSample(Window(width: 800, height: 600), for: Keys.lastWindow)   // Key<Window?>
		/// 	.withSample([Bookmark(title: "t", url: URL(string: "https://example.com")!)], for: Keys.bookmarks)
		/// ```
		///
		/// A sample with every optional property set shows the most: a property the sample leaves `nil` is not
		/// described, and elements of several structures in one array leave their structure undescribed.
		public func withSample<Value>(_ sample: Value, for key: Key<Value>) -> Self {
			var catalog = self
			catalog.sampleShapes[key.name] = key.shape(of: sample)
			return catalog
		}

		/// What the catalog says of one key, as the schema file records it (the app has the keys themselves: their
		/// names, defaults, ``Defaults/isLocked(_:)`` and ``Defaults/iCloud/keys`` say the rest).
		package struct Entry: @unchecked Sendable {
			/// The key's name.
			package let name: String
			/// The value type, as Swift spells it: `URL`, `Optional<String>`, `Array<Money>`.
			package let valueType: String
			/// The name of the bridge the key writes with.
			package let bridgeName: String
			/// The stored form of the key's default: `nil` for an optional key, whose default is `nil`, and for a
			/// default computed at each read. A normalised property-list value (`String`, `Int`, `[String: Any]` …),
			/// never changed after it is made.
			package let storedDefault: Any?
			/// Whether the key is synced (``Defaults/iCloud/add(_:)-(Defaults.Keys...)``).
			package let isSynced: Bool
			/// Whether an administrator locked the key (``Defaults/isLocked(_:)``), as the store reads it now.
			package let isLocked: Bool
		}

		/// The description of each key, in the catalog's order.
		package var entries: [Entry] {
			schemaEntries.map { entry in
				Entry(
					name: entry.name, valueType: entry.type, bridgeName: entry.bridge,
					storedDefault: entry.storedDefault?.value,
					isSynced: entry.isSynced, isLocked: entry.isLocked)
			}
		}

		/// Writes the schema of the catalog's keys to `url`, or, when `url` is `nil`, beside the settings file of
		/// the store the keys live in (`Settings.schema.plist` beside `Settings.plist`), replacing the file.
		///
		/// The schema is an XML property list: a key's default is kept in its stored form, dates and data included,
		/// as the settings file keeps it. `defaults` reads it when it is beside the settings file, to convert a
		/// value it is given to what the key reads (or refuse it) and to list the keys.
		///
		/// - Returns: Where the schema was written.
		/// - Throws: ``SchemaError`` when `url` is `nil` and the keys are not all in one file store, or when the file
		///   cannot be written.
		@discardableResult
		public func writeSchema(to url: URL? = nil) throws(SchemaError) -> URL {
			let destination: URL
			if let url {
				destination = url
			} else {
				// The stores the keys were declared in, whatever test scope stands in for them now.
				let stores = keys.map(\.declaredSuite)
				guard let file = stores.first as? any FileBackedStore, stores.allSatisfy({ $0 === file }) else {
					throw SchemaError(
						description:
							"The schema has no settings file to go beside: the catalogued keys are not all in one file store. Name a file with writeSchema(to:)."
					)
				}
				destination = SchemaFile.url(besideSettingsFile: file.url)
			}
			do {
				let data = try SchemaFile(entries: schemaEntries).data()
				try FileManager.default.createDirectory(
					at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
				try data.write(to: destination, options: .atomic)
			} catch {
				throw SchemaError(
					description:
						"The schema \(destination.path(percentEncoded: false)) could not be written: \(error.localizedDescription)"
				)
			}
			return destination
		}

		/// The names of the keys declared in `store` so far in this run that the catalog does not list, sorted.
		///
		/// A key is declared when it is first used, so call this after the code that uses the keys ran, in a test:
		///
		/// ```swift
		/// @Test func theCatalogListsEveryKey() {
		/// 	_ = AppSettings.allKeysTouchedAtLaunch()
		/// 	#expect(Defaults.catalog.uncataloguedKeys().isEmpty)
		/// }
		/// ```
		public func uncataloguedKeys(in store: any Store = Defaults.standardStore) -> [String] {
			// Declared stores: under a test's isolated scope, `suite` is the stand-in, which declares nothing.
			let catalogued = Set(keys.filter { $0.declaredSuite === store }.map(\.name))
			let declared = StoreRuntime.of(store).declarations.withLock { Array($0.byName.keys) }
			return declared.filter { !catalogued.contains($0) }.sorted()
		}

		/// A schema that could not be written.
		public struct SchemaError: Error, CustomStringConvertible {
			/// What went wrong, in a sentence.
			public let description: String
		}

		var schemaEntries: [SchemaFile.Entry] {
			keys.map { key in
				guard let described = key as? any DescribedKey else {
					// Every key is a `Key<Value>`; `Keys` is only their common base.
					return SchemaFile.Entry(
						name: key.name, type: "unknown", bridge: "unknown", input: nil, storedDefault: nil,
						hasDynamicDefault: false, isSynced: Defaults.iCloud.isSynced(key),
						isLocked: Defaults.isLocked(key))
				}
				var entry = described.schemaEntry
				if let shape = sampleShapes[key.name] {
					entry.shape = shape
				}
				return entry
			}
		}
	}
}

/// A key that can describe itself for the schema: `Key<Value>`, whose type the catalog's list has erased.
protocol DescribedKey {
	var schemaEntry: SchemaFile.Entry { get }
}

extension Defaults.Key: DescribedKey {
	var schemaEntry: SchemaFile.Entry {
		SchemaFile.Entry(
			name: name, type: String(describing: Value.self), bridge: bridge.name,
			input: SchemaFile.Input.of(
				StoredForm.unwrappingOptional(Value.self), bridgeName: bridge.name,
				automaticName: Defaults.AnyBridge<Value>.automatic.name),
			elementInput: (Value.self as? any SchemaElements.Type)?.elementInput(bridgeName: bridge.name),
			shape: staticDefault.flatMap(shape(of:)),
			storedDefault: staticDefault.flatMap { try? bridge.storedForm(of: $0) },
			hasDynamicDefault: hasDynamicDefault, isSynced: Defaults.iCloud.isSynced(self),
			isLocked: Defaults.isLocked(self))
	}

	/// The structure of `value`'s stored form through the key's bridge.
	func shape(of value: Value) -> StoredShape? {
		guard let stored = try? bridge.storedForm(of: value) else {
			return nil
		}
		return StoredShape.of(storedForm: stored, value: value)
	}
}

extension SchemaFile.Input {
	/// How text from a command line becomes a value of `type` stored through the bridge named `bridgeName`: for the
	/// scalars stored as they are and for URLs and UUIDs, through the bridge their type picks (`automaticName`), or,
	/// for a URL, JSON text named on the key, the same form.
	static func of(_ type: Any.Type, bridgeName: String, automaticName: String) -> Self? {
		let automatic = bridgeName == automaticName
		switch type {
		case is String.Type: return automatic ? .string : nil
		case is Bool.Type: return automatic ? .boolean : nil
		case is any BinaryInteger.Type: return automatic ? .integer : nil
		case is any BinaryFloatingPoint.Type: return automatic ? .real : nil
		case is Date.Type: return automatic ? .date : nil
		case is Data.Type: return automatic ? .data : nil
		case is URL.Type: return automatic || bridgeName == "JSON text" ? .url : nil
		case is UUID.Type: return automatic || bridgeName.contains("UUIDBridge") ? .uuid : nil
		default: return nil
		}
	}
}

/// An array, set or dictionary key, whose elements a command line may give one by one.
protocol SchemaElements {
	/// How text becomes each element when the collection is stored through the bridge named `bridgeName`: the
	/// collection's own bridge, or an element bridge (`.array(of:)`, `.set(of:)`, `.dictionary(of:)`) naming it.
	static func elementInput(bridgeName: String) -> SchemaFile.Input?
}

extension SchemaElements {
	/// The element bridge's name within `bridgeName`, the collection's: the element type's own when the collection
	/// uses the bridge its type picks, the named one of an element bridge.
	fileprivate static func elementBridgeName<Element: Defaults.Serializable>(
		_: Element.Type, in bridgeName: String, automaticName: String
	) -> String? {
		if bridgeName == automaticName {
			return Defaults.AnyBridge<Element>.automatic.name
		}
		for prefix in ["array of ", "set of ", "dictionary of "] where bridgeName.hasPrefix(prefix) {
			return String(bridgeName.dropFirst(prefix.count))
		}
		return nil
	}

	fileprivate static func input<Element: Defaults.Serializable>(
		of _: Element.Type, bridgeName: String, automaticName: String
	) -> SchemaFile.Input? {
		elementBridgeName(Element.self, in: bridgeName, automaticName: automaticName).flatMap {
			SchemaFile.Input.of(Element.self, bridgeName: $0, automaticName: Defaults.AnyBridge<Element>.automatic.name)
		}
	}
}

extension Array: SchemaElements where Element: Defaults.Serializable {
	static func elementInput(bridgeName: String) -> SchemaFile.Input? {
		input(of: Element.self, bridgeName: bridgeName, automaticName: Defaults.AnyBridge<Self>.automatic.name)
	}
}

extension Set: SchemaElements where Element: Defaults.Serializable {
	static func elementInput(bridgeName: String) -> SchemaFile.Input? {
		input(of: Element.self, bridgeName: bridgeName, automaticName: Defaults.AnyBridge<Self>.automatic.name)
	}
}

extension Dictionary: SchemaElements where Key == String, Value: Defaults.Serializable {
	static func elementInput(bridgeName: String) -> SchemaFile.Input? {
		input(of: Value.self, bridgeName: bridgeName, automaticName: Defaults.AnyBridge<Self>.automatic.name)
	}
}

extension Defaults.iCloud {
	/// Whether `key` was added to the synced keys (by `iCloud: true` or ``add(_:)-(Defaults.Keys...)``).
	static func isSynced(_ key: Defaults.Keys) -> Bool {
		registry.withLock { $0.keys.contains(key) }
	}
}
