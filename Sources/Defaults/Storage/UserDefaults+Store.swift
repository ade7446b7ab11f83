import Foundation

/// Foundation's `UserDefaults` as a ``Defaults/Store``, with Linux Foundation's failures kept out.
///
/// On Linux, Foundation writes nothing to disk unless `synchronize()` is called, widens and narrows numbers when it
/// reloads them, crashes or hangs on values it cannot store, and cannot store `nil`. This conformance:
/// - normalises every value before it reaches Foundation's writer and after it comes back, so integers of every
///   width, `Float` and `CGFloat` read back exactly, also after a reload;
/// - removes the key for `nil` instead of calling `set(nil, forKey:)`, which never returns on Linux;
/// - flushes writes to disk within about 100 ms, at ``Defaults/Store/flush()`` and when the process exits
///   normally, with no call from you.
///
/// Dates are the one value it cannot fix: Foundation on Linux writes them in whole seconds. The file store that is
/// the default on Linux keeps them exactly.
extension UserDefaults: Defaults.Store {
	/// The stored value for `key` in its normalised shape, or the registered default.
	public func storedValue(forKey key: String) -> Any? {
		guard let object = object(forKey: key) else {
			return nil
		}
		return try? Defaults.PropertyList.normalize(object, depth: 0)
	}

	/// Stores `value` for `key` and schedules a flush to disk.
	public func setStoredValue(_ value: Any, forKey key: String) {
		set(value, forKey: key)
		DurableWrites.didWrite(self)
	}

	/// Removes the stored value for `key` and schedules a flush to disk.
	public func removeStoredValue(forKey key: String) {
		removeObject(forKey: key)
		DurableWrites.didWrite(self)
	}

	/// Registers defaults with `register(defaults:)`.
	public func registerDefaultValues(_ values: [String: Any]) {
		register(defaults: values)
		RegisteredUserDefaults.record(values)
	}

	/// The keys `dictionaryRepresentation()` lists, less those that only read the default registered through
	/// ``registerDefaultValues(_:)`` (keys register their defaults that way).
	///
	/// Foundation gives no other account of a suite's keys, and it mixes registered defaults in. A key whose stored
	/// value equals its registered default is left out too: it reads the same either way, so nothing that reads
	/// keys can tell the difference. Defaults registered with `register(defaults:)` directly are not known here.
	public func storedKeys() -> [String] {
		// Foundation on Linux shows no registration domain (`volatileDomain(forName:)` is empty), so the package keeps
		// its own account of what it registered; like Foundation's registrations, it is process-wide.
		let registered = RegisteredUserDefaults.values
		return dictionaryRepresentation().compactMap { key, value in
			guard let registeredValue = registered[key] else {
				return key
			}
			guard let stored = try? Defaults.PropertyList.normalize(value, depth: 0),
				let registeredForm = try? Defaults.PropertyList.normalize(registeredValue, depth: 0),
				Defaults.PropertyList.isEqual(stored, registeredForm)
			else {
				return key
			}
			return nil
		}
	}

	/// `false`: other processes and Foundation's own API change a suite behind the package's back, so keys of a
	/// `UserDefaults` store look every read up.
	public var reportsEveryChange: Bool { false }

	/// Calls `synchronize()`.
	@discardableResult
	public func flush() -> Bool {
		synchronize()
	}
}

#if canImport(ObjectiveC)
	extension Defaults.Store where Self == UserDefaults {
		/// The standard store, `UserDefaults.standard`, so that `suite: .standard`, as written for the well-known
		/// Defaults package, compiles and means what it means there.
		///
		/// ```swift
		/// let theme = Defaults.Key<String>("theme", default: "light", suite: .standard)
		/// ```
		public static var standard: UserDefaults { UserDefaults.standard }
	}
#else
	extension Defaults.Store where Self == Defaults.FileStore {
		/// The standard store, ``Defaults/standardStore``, so that `suite: .standard`, as written for the well-known
		/// Defaults package, means the store keys use when none is named.
		///
		/// ```swift
		/// let theme = Defaults.Key<String>("theme", default: "light", suite: .standard)
		/// // the same store, and so the same value, as Key<String>("theme", default: "light")
		/// ```
		///
		/// On Linux that is ``Defaults/FileStore/standard``, not Foundation's `UserDefaults.standard`: two in-memory
		/// copies of one file in one process would each miss the other's writes.
		public static var standard: Defaults.FileStore { Defaults.FileStore.standard }
	}
#endif

/// Gets `UserDefaults` writes to disk on platforms where Foundation does not do it by itself. Process-wide because
/// the flush at exit is: the stores written since the last flush wait here, held until they are synchronised.
enum DurableWrites {
	private static let pending = LockedState<(stores: [ObjectIdentifier: UserDefaults], isScheduled: Bool)>(
		([:], false))
	private static let installExitHandler: Void = {
		atexit { DurableWrites.flushAll() }
	}()

	static func didWrite(_ store: UserDefaults) {
		#if !canImport(ObjectiveC)
			_ = installExitHandler
			let shouldSchedule = pending.withLock { state in
				state.stores[ObjectIdentifier(store)] = store
				defer { state.isScheduled = true }
				return !state.isScheduled
			}
			// Out of descriptors, Dispatch would trap: the write then waits for the next one or for exit.
			guard DispatchStart.isStarted else {
				pending.withLock { $0.isScheduled = false }
				return
			}
			if shouldSchedule {
				DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(100)) {
					flushAll()
				}
			}
		#endif
	}

	// Held for a whole flush, so that the flush at exit waits for one under way: Foundation rewrites its file in place,
	// and a process that ends halfway through leaves it truncated.
	private static let flushing = LockedState(())

	static func flushAll() {
		flushing.withLock { _ in
			let stores = pending.withLock { state in
				defer { state = ([:], false) }
				return Array(state.stores.values)
			}
			for store in stores {
				store.synchronize()
			}
		}
	}
}

/// The defaults registered through the store seam on any `UserDefaults`: process-wide, as Foundation's registration
/// domain is on Linux.
enum RegisteredUserDefaults {
	private static let registered = LockedState<[String: Any]>([:])

	static func record(_ values: [String: Any]) {
		registered.withLock { $0.merge(values) { _, new in new } }
	}

	static var values: [String: Any] {
		registered.withLock { $0 }
	}
}
