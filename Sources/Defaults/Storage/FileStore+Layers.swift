import Foundation

/// A store that reads some keys from layers it never writes (locks, launch arguments, the environment, system-wide
/// defaults), above or beneath the values it
/// stores. The layers above Storage ask it for what only the stored values say, so that nothing of another layer is
/// pushed by sync, recorded by a snapshot or moved by a migration.
protocol LayeredStore: Defaults.Store {
	/// The value the store keeps for `key` itself (the one a write replaces), without the other layers; `nil` when it
	/// keeps none.
	func ownValue(forKey key: String) -> Any?
	/// The value `key` reads without the layers above the stored values (locks, launch arguments, the environment):
	/// what an update starts from, since what it stores goes beneath them, and what a key reads when the launch
	/// argument or variable that sets it does not read as its value.
	func valueBeneathOverrides(forKey key: String) -> Any?
	/// The text of the launch argument or environment variable that gives `key` the value it reads, when it is a
	/// plain string: a key of another type reads it as `UserDefaults` would (a number, a Boolean), or as the JSON text
	/// of a string (a URL, a `Codable` value that is a string).
	func overrideText(forKey key: String) -> String?
	/// Whether an administrator locked `key`: it reads the locked value, and the store refuses writes of it.
	func isLocked(_ key: String) -> Bool
	/// Stores the user's `value` for `key` (removes it for `nil`) even when `key` is locked: the value goes beneath
	/// the lock, into the settings file, and the key reads the locked value as before. For values that are the
	/// user's whatever the administrator fixed (sync's remote values, migrations); never for a write of the app's.
	func storeBeneathLocks(_ value: Any?, forKey key: String)
	/// The file that locked `key`, if one did.
	func lockFile(ofKey key: String) -> String?
	/// Makes the reads of the store on `thread` read the user's own values only, none of the layers above them (locks,
	/// launch arguments, the environment) or beneath them (system-wide and registered defaults), until called with 0:
	/// a migration's thread, whose custom steps read the user's values and store theirs beneath the locks. The caller
	/// keeps keys from remembering what that thread reads.
	func readOwnValuesOnly(onThread thread: UInt)
	/// What observers of `key` compare (``ObservedForm``), now and once `stored` is the user's value (removed for
	/// `nil`) when `storing` is given: a write's observers hear nothing when the two are the same.
	func observedForms(forKey key: String, storing stored: Any??) -> (now: ObservedForm, after: ObservedForm?)
	/// The layer `key` reads its value from; with `skippingOverrides`, the layer beneath launch arguments and the
	/// environment (a key whose override does not read as its value reads from there).
	func layer(ofKey key: String, skippingOverrides: Bool) -> Defaults.Layer
}

// The layers are Storage's: the key-level API (`Defaults.layer(of:)`, Keys/Defaults+Locks.swift) hands them on as
// they are.
extension Defaults {
	/// Where a key's value comes from, highest first (see <doc:Layers>).
	public enum Layer: Sendable, Equatable {
		/// An administrator locked the key in `file` (`<name>.locks.plist` in a folder of `$XDG_CONFIG_DIRS`).
		case locked(file: String)
		/// A `-key value` launch argument, for this run only.
		case launchArgument
		/// The environment variable `variable`, read because the app asked for its prefix
		/// (``FileStore/readEnvironment(prefix:)``). A variable whose text does not read as the key's value is
		/// reported and skipped: the key then reads, and is said to read, the layer beneath.
		case environment(variable: String)
		/// The user's value, stored in the key's store: the only layer writes change.
		case stored
		/// A system-wide default from `file` (`<name>.plist` in a folder of `$XDG_CONFIG_DIRS`).
		case system(file: String)
		/// Nothing sets the key: it reads a registered default or its own default value.
		case defaultValue
	}
}

/// What a read of a key finds in a store, as observers compare it: the value of the highest layer that sets the key,
/// and, when that is the text of a launch argument or environment variable (which a key that cannot read the text
/// skips, reading the layer beneath), the value beneath it too, so that a change of the user's value beneath an
/// override a key skips is a change of what that key reads.
struct ObservedForm {
	/// What the store's `storedValue(forKey:)` returns.
	var value: Any?
	/// Whether `value` comes from a layer above the user's values (a lock, a launch argument, an environment
	/// variable), which a write does not reach.
	var isFromAbove = false
	/// Whether `value` is the text of a launch argument or environment variable.
	var isOverrideText = false
	/// The value beneath the override text (the user's value, else a system-wide or registered default); `nil` when
	/// `value` is no override text.
	var beneath: Any?

	/// Whether a read of any key finds the same in both.
	func isSame(as other: ObservedForm) -> Bool {
		Defaults.PropertyList.isEqualOrBothAbsent(value, other.value) && isOverrideText == other.isOverrideText
			&& (!isOverrideText || Defaults.PropertyList.isEqualOrBothAbsent(beneath, other.beneath))
	}
}

extension Defaults.Store {
	/// What observers of `key` compare: what a read finds, with the value beneath an override in text.
	func observedForm(forKey key: String) -> ObservedForm {
		if let layered = self as? any LayeredStore {
			return layered.observedForms(forKey: key, storing: nil).now
		}
		return ObservedForm(value: storedValue(forKey: key))
	}

	/// The value the store keeps for `key` itself, without launch arguments or registered defaults: what sync pushes,
	/// snapshots record and migrations move.
	func ownValue(forKey key: String) -> Any? {
		if let layered = self as? any LayeredStore {
			return layered.ownValue(forKey: key)
		}
		guard storedKeys().contains(key) else {
			return nil
		}
		return storedValue(forKey: key)
	}

	/// The value `key` reads without locks and launch arguments: what an update starts from, so that a value it
	/// stores is computed from the user's value, never from an argument or a lock of this run.
	func valueBeneathOverrides(forKey key: String) -> Any? {
		if let layered = self as? any LayeredStore {
			return layered.valueBeneathOverrides(forKey: key)
		}
		return storedValue(forKey: key)
	}
}

// The layers a file store reads beside its stored values. Each is kept whole in memory and folded into `above` (read
// before the stored values) or `beneath` (read after them) when it changes, never at a read, so that a read costs one
// lookup per layer group, and a store without layers above its values skips them with one check.
extension Defaults.FileStore: LayeredStore {
	func ownValue(forKey key: String) -> Any? {
		memory.withLock { $0.values[key] }
	}

	func valueBeneathOverrides(forKey key: String) -> Any? {
		memory.withLock { $0.values[key] ?? $0.beneath[key] }
	}

	func storeBeneathLocks(_ value: Any?, forKey key: String) {
		store(value, forKey: key, beneathLocks: true)
	}

	func observedForms(forKey key: String, storing stored: Any??) -> (now: ObservedForm, after: ObservedForm?) {
		memory.withLock { memory in
			(memory.observedForm(key, own: memory.values[key]), stored.map { memory.observedForm(key, own: $0) })
		}
	}

	func readOwnValuesOnly(onThread thread: UInt) {
		threadReadingOwnValues.store(thread, ordering: .relaxed)
	}

	/// Whether the calling thread is a migration's, which reads the user's own values only, none of the layers above
	/// or beneath them: checked only for a key such a layer sets, so that other reads pay nothing for it.
	var isReadingOwnValuesOnly: Bool {
		let thread = threadReadingOwnValues.load(ordering: .relaxed)
		return thread != 0 && thread == ThreadIdentity.current
	}

	func overrideText(forKey key: String) -> String? {
		memory.withLock { $0.locked[key] == nil ? ($0.arguments[key] ?? $0.environment[key]) as? String : nil }
	}

	/// Sets the launch-argument domain, read above the stored values.
	func setArguments(_ arguments: [String: Any]) {
		memory.withLock { memory in
			memory.arguments = arguments
			memory.foldAbove()
		}
	}
}

// The environment: opt-in, by a prefix the app names. Read once per call, above the user's values and beneath launch
// arguments and locks; never written, so that a deployment's setting never becomes the user's.
extension Defaults.FileStore {
	/// Reads each environment variable named `<prefix><key name>` as the value of that key, above the values the user
	/// stored and beneath launch arguments and locked values, until the process ends or this is called again.
	///
	/// Nothing is read from the environment unless the app asks, and only variables with the prefix:
	///
	/// ```swift
	/// // MYAPP_volume=8 MYAPP_theme=dark MYAPP_window='{"width":800,"height":600}' app
	/// Defaults.FileStore.standard.readEnvironment(prefix: "MYAPP_")
	/// ```
	///
	/// A variable's text reads as a launch argument's does: a number for a number key, `true`, `false`, `YES` or `NO`
	/// for a Boolean key, the address for a `URL` key, JSON for a `Codable` value, a property list in text form
	/// (`(a, b)`, `{ a = 1; }`) for a collection. Text that does not read as the key's value is reported once as a
	/// ``Defaults/Failure`` and skipped: the key reads the user's value (or the next layer). Variables are never
	/// written to the settings file, synced, recorded by snapshots or moved by migrations; `Defaults.reset`
	/// removes the user's value, and the key then reads the variable. ``Defaults/layer(of:)`` names the variable.
	///
	/// An empty prefix is refused (reported as a ``Defaults/Failure``), since it would read every variable of the
	/// process (`HOME`, `PATH`) as a setting.
	public func readEnvironment(prefix: String) {
		guard !prefix.isEmpty else {
			Defaults.report(
				storageFailure(
					"readEnvironment(prefix:) was given an empty prefix, which would read every variable of the "
						+ "process as a setting; nothing was read from the environment."))
			return
		}
		setEnvironment(Self.environmentDomain(prefix: prefix, from: ProcessInfo.processInfo.environment))
	}

	/// The values of the variables of `environment` named `<prefix><key name>`, by key name, and the variable of each.
	static func environmentDomain(
		prefix: String, from environment: [String: String]
	) -> (values: [String: Any], variables: [String: String]) {
		var values: [String: Any] = [:]
		var variables: [String: String] = [:]
		for (variable, text) in environment where variable.hasPrefix(prefix) && variable.count > prefix.count {
			let key = String(variable.dropFirst(prefix.count))
			values[key] = argumentValue(text)
			variables[key] = variable
		}
		return (values, variables)
	}

	/// Sets the environment layer and tells observers of the keys whose value changed for reads.
	func setEnvironment(_ domain: (values: [String: Any], variables: [String: String])) {
		let changed = memory.withLock { memory -> Set<String> in
			let keys = Set(memory.environment.keys).union(domain.values.keys)
			let before = keys.map { memory.read($0) }
			memory.environment = domain.values
			memory.environmentBy = domain.variables
			memory.foldAbove()
			var changed: Set<String> = []
			for (key, old) in zip(keys, before) where !Defaults.PropertyList.isEqualOrBothAbsent(old, memory.read(key))
			{
				changed.insert(key)
			}
			return changed
		}
		if !changed.isEmpty {
			reportOutsideChanges(changed)
		}
	}
}

// System-wide defaults: `<folder>/<file name>` in each folder of `$XDG_CONFIG_DIRS`, beneath the user's values and
// above registered defaults. Read with the store's own bounded reader; a file that does not read is refused and
// reported, never moved or changed: it belongs to the administrator.
extension Defaults.FileStore {
	/// The folders of `$XDG_CONFIG_DIRS` (colon-separated, absolute paths only, as the XDG Base Directory
	/// specification says), else `/etc/xdg`.
	static func systemConfigurationDirectories(
		environment: [String: String] = ProcessInfo.processInfo.environment
	) -> [URL] {
		guard let variable = environment["XDG_CONFIG_DIRS"], !variable.isEmpty else {
			return [URL(filePath: "/etc/xdg", directoryHint: .isDirectory)]
		}
		return variable.split(separator: ":").filter { $0.hasPrefix("/") }.map {
			URL(filePath: String($0), directoryHint: .isDirectory)
		}
	}

	/// The store of the file at `url`, reading system-wide defaults from the folders `systemFolders`.
	static func at(_ url: URL, systemFolders: [URL]) -> Defaults.FileStore {
		FileStoreRegistry.store(at: url, systemFolders: systemFolders)
	}

	func loadSystemLayer(failures: inout [Defaults.Failure]) {
		guard !systemFiles.isEmpty || !lockFiles.isEmpty else {
			return
		}
		_ = takeSystemLayer(failures: &failures)
	}

	/// Reads the system files again and tells observers of the keys whose value changed for reads.
	func reloadSystemLayer() {
		var failures: [Defaults.Failure] = []
		// Under the disk lock, so that two reloads in a row install their reads in order.
		let changed = disk.withLock { _ in takeSystemLayer(failures: &failures) }
		failures.forEach(Defaults.report)
		if !changed.isEmpty {
			reportOutsideChanges(changed)
		}
	}

	/// Reads every system file and installs what they hold; returns the keys whose read value changed.
	private func takeSystemLayer(failures: inout [Defaults.Failure]) -> Set<String> {
		var problems: [String: String] = [:]
		let (system, systemBy) = Self.readMerged(systemFiles, problems: &problems)
		let (locked, lockedBy) = Self.readMerged(lockFiles, problems: &problems)
		return memory.withLock { memory in
			for (path, reason) in problems where memory.systemProblems[path] != reason {
				failures.append(
					storageFailure(
						"The system-wide defaults file \(path) is refused (\(reason)); its values are not read until "
							+ "it is fixed, and it is left as it is."))
			}
			memory.systemProblems = problems
			// Whatever the values did: a value that moved to another folder unchanged now comes from that file.
			memory.systemBy = systemBy
			memory.lockedBy = lockedBy
			let keys = Self.changedKeys(from: memory.system, to: system).union(
				Self.changedKeys(from: memory.locked, to: locked))
			guard !keys.isEmpty else {
				return []
			}
			let before = keys.map { memory.read($0) }
			memory.system = system
			memory.beneath = memory.registered.merging(system) { _, system in system }
			memory.locked = locked
			memory.foldAbove()
			// Only the keys that read differently: a key the user or a launch argument sets reads as it did.
			var changed: Set<String> = []
			for (key, old) in zip(keys, before) where !Defaults.PropertyList.isEqualOrBothAbsent(old, memory.read(key))
			{
				changed.insert(key)
			}
			return changed
		}
	}

	/// The values of `files` merged, the first file's value of a key winning, and the path each came from; a file
	/// that does not read adds its reason to `problems`.
	private static func readMerged(
		_ files: [SettingsFile], problems: inout [String: String]
	) -> (values: [String: Any], sources: [String: String]) {
		var merged: [String: Any] = [:]
		var sources: [String: String] = [:]
		// The last file first, so that an earlier file's value of a key replaces a later one's.
		for file in files.reversed() {
			switch file.read() {
			case .missing:
				break
			case .values(let values, _):
				merged.merge(values) { _, earlier in earlier }
				for key in values.keys {
					sources[key] = file.path
				}
			case .unreadable(let data, _, _) where data.isEmpty:
				break
			case .unreadable(_, _, let reason), .inaccessible(let reason):
				problems[file.path] = reason
			}
		}
		return (merged, sources)
	}
}

extension Defaults.FileStore.Memory {
	/// What a read of `key` finds, through every layer.
	func read(_ key: String) -> Any? {
		above[key] ?? values[key] ?? beneath[key]
	}

	/// What observers of `key` compare when the user's value is `own`.
	func observedForm(_ key: String, own: Any?) -> ObservedForm {
		let beneath = own ?? self.beneath[key]
		guard !above.isEmpty, let top = above[key] else {
			return ObservedForm(value: beneath)
		}
		guard locked[key] == nil, top is String else {
			return ObservedForm(value: top, isFromAbove: true)
		}
		return ObservedForm(value: top, isFromAbove: true, isOverrideText: true, beneath: beneath)
	}

	/// Folds the layers above the stored values into `above`: locked values over launch arguments over the
	/// environment.
	mutating func foldAbove() {
		var folded = environment
		folded.merge(arguments) { _, argument in argument }
		folded.merge(locked) { _, locked in locked }
		above = folded
	}
}

// Locks: `<name>.locks.plist` beside the system-wide defaults, a dictionary of the keys an administrator fixes and
// the value each is fixed at. A locked key reads that value above every other layer, and the store refuses to store
// or remove a value for it when the app asks (a key, `write(_:forKey:)`, a reset). What is the user's whatever the
// administrator fixed (sync's remote values, a migration's moves) is stored beneath the lock (`storeBeneathLocks`).
extension Defaults.FileStore {
	/// `app.plist` → `app.locks.plist`.
	static func lockFileName(forFileNamed name: String) -> String {
		(name.hasSuffix(".plist") ? String(name.dropLast(".plist".count)) : name) + ".locks.plist"
	}

	/// Whether an administrator locked `key` (see ``Defaults/isLocked(_:)``).
	func isLocked(_ key: String) -> Bool {
		memory.withLock { !$0.locked.isEmpty && $0.locked[key] != nil }
	}

	/// The file that locked `key`, if one did.
	func lockFile(ofKey key: String) -> String? {
		memory.withLock { $0.lockedBy[key] }
	}

	func layer(ofKey key: String, skippingOverrides: Bool) -> Defaults.Layer {
		memory.withLock { memory in
			if let file = memory.lockedBy[key] {
				return .locked(file: file)
			}
			if !skippingOverrides, memory.arguments[key] != nil {
				return .launchArgument
			}
			if !skippingOverrides, let variable = memory.environmentBy[key] {
				return .environment(variable: variable)
			}
			if memory.values[key] != nil {
				return .stored
			}
			if let file = memory.systemBy[key] {
				return .system(file: file)
			}
			return .defaultValue
		}
	}

	func reportLockedWrite(of key: String, lockedBy lockFile: String) {
		Defaults.report(
			Defaults.Failure(
				keyName: key, reason: .storage,
				message:
					"The key '\(key)' is locked by the administrator (\(lockFile)), so the write was not stored; the "
					+ "key keeps reading its locked value."))
	}
}
