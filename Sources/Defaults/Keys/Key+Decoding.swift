import Foundation
import Synchronization

extension Defaults {
	/// What a key finds in its store: nothing, a value in the current form, a value in an older form, or a value
	/// that does not decode.
	///
	/// ```swift
	/// switch Defaults.storedState(of: .window) {
	/// case .absent, .current: break
	/// case .olderForm(let window, let bridgeName): print("read \(window) from \(bridgeName)")
	/// case .undecodable(let error): logger.error("\(error)")
	/// }
	/// ```
	public enum StoredState<Value> {
		/// Nothing is stored (a registered default counts as stored).
		case absent
		/// The stored value decodes with the key's bridge.
		case current(Value)
		/// The stored value decodes with one of the key's further forms, named by `bridgeName`; for a key that names
		/// its elements' bridge (``Defaults/AnyBridge/array(of:alsoReading:)`` …), also when an element decodes only
		/// with one of the older forms listed for elements, which `bridgeName` then names.
		case olderForm(Value, bridgeName: String)
		/// The stored value does not decode; the key reads as its default.
		case undecodable(DecodingError)

		/// The decoded value, the error, or `nil` when nothing is stored.
		package var result: Result<Value, DecodingError>? {
			switch self {
			case .absent: nil
			case .current(let value), .olderForm(let value, _): .success(value)
			case .undecodable(let error): .failure(error)
			}
		}
	}

	/// What `key` finds in its own store, with the reason when it does not decode.
	public static func storedState<Value>(of key: Key<Value>) -> StoredState<Value> {
		key.storedState(in: key.suite)
	}
}

extension Defaults.Key {
	/// The value of this key in `store`: the value read last while the key's own store has not changed since (one
	/// atomic load), else the remembered value while the stored form is unchanged, else a fresh decode, else the
	/// default (reporting the failure once).
	@inlinable
	func value(in store: any Defaults.Store) -> Value {
		// The count is loaded through the optional in place, not bound to a name: a binding would retain the counter
		// for the rest of the read, an atomic write to a cache line that every reading thread shares.
		if store === declaredSuite, let current = changeCounter?.value {
			if let value = cache.value(at: current) {
				return value
			}
			return lookedUpValue(in: store, at: current)
		}
		return lookedUpValue(in: store, at: nil)
	}

	/// Reads through the store. In the key's own store the value is remembered under `current`, the change count read
	/// before the store was, so that a change during the read leaves a count that is already out of date, never a
	/// stale value; without a count (`nil`), only the stored form can match it again.
	///
	/// Neither a dynamic default (it runs again at each read) nor a failure (reported once, through this path) is
	/// remembered.
	///
	/// A read of a store that a scope stands another store in for (its count carries `ChangeCounter.standInFlag`, or it
	/// has no count) reads the stand-in when the caller is in that scope, and the store without its cache otherwise.
	@usableFromInline
	func lookedUpValue(in store: any Defaults.Store, at current: UInt64?) -> Value {
		if let standIn = StandInScope.standIn(for: store) {
			return lookedUpValue(in: standIn, at: nil)
		}
		// A count that carries the flag is never remembered: the fast path of a scope's read would find the value.
		let current = current.flatMap { $0 & Defaults.ChangeCounter.standInFlag == 0 ? $0 : nil }
		let isOwnStore = store === declaredSuite
		guard let stored = store.storedValue(forKey: name) else {
			if isOwnStore, let current, !hasDynamicDefault {
				let value = defaultValue
				cache.remember(value, at: current)
				return value
			}
			return defaultValue
		}
		if readsByCast, let value = stored as? Value {
			if isOwnStore, let current {
				cache.remember(value, at: current)
			}
			return value
		}
		if isOwnStore, let value = cache.value(decodedFrom: stored, at: current) {
			return value
		}
		switch decode(stored, in: store) {
		case .current(let value), .olderForm(let value, _):
			if isOwnStore {
				cache.remember(value, storedForm: stored, at: current)
			}
			return value
		case .undecodable(let error):
			(isOwnStore ? declaredRuntime : StoreRuntime.of(store)).reportFailure(error)
			return valueBeneathUnreadableOverride(in: store) ?? defaultValue
		case .absent:
			return defaultValue
		}
	}

	/// Whether the launch argument or environment variable that overrides the key in `store`, if any, reads as the
	/// key's value: reads skip one that does not.
	func readsItsOverride(in store: any Defaults.Store) -> Bool {
		guard let layered = store as? any LayeredStore, let text = layered.overrideText(forKey: name) else {
			return true
		}
		if case .undecodable = decode(text, in: store) {
			return false
		}
		return true
	}

	/// A launch argument or environment variable that does not read as the key's value is skipped (it was reported):
	/// the value of the layer beneath it, if that reads.
	func valueBeneathUnreadableOverride(in store: any Defaults.Store) -> Value? {
		guard let layered = store as? any LayeredStore, layered.overrideText(forKey: name) != nil,
			let beneath = layered.valueBeneathOverrides(forKey: name)
		else {
			return nil
		}
		switch bridge.decode(beneath, orOlderForms: alsoReading, keyName: name) {
		case .current(let value), .olderForm(let value, _): return value
		case .absent, .undecodable: return nil
		}
	}

	/// The stored form that `value` is written as, through the key's bridge.
	func storedForm(of value: Value) throws(Defaults.SerializationError) -> Any? {
		try bridge.storedForm(of: value)
	}

	/// Decodes `stored` with the key's bridge, then with each further form; the text of a launch argument or an
	/// environment variable that does not decode as it is is read as `UserDefaults` reads it for a typed getter, or
	/// as JSON text of a string (see `argumentReadings(of:)`).
	///
	/// - Parameter isOverrideText: whether `stored` is such text; asked of the store when `nil`.
	func decode(
		_ stored: Any, in store: (any Defaults.Store)? = nil, isOverrideText: Bool? = nil
	) -> Defaults.StoredState<Value> {
		let state = bridge.decode(stored, orOlderForms: alsoReading, keyName: name)
		// Only on a failure, and only for text: the reads that decode pay nothing for this.
		guard case .undecodable = state, let text = stored as? String,
			isOverrideText ?? (((store ?? suite) as? any LayeredStore)?.overrideText(forKey: name) == text)
		else {
			return state
		}
		for reading in Self.argumentReadings(of: text) {
			let read = bridge.decode(reading, orOlderForms: alsoReading, keyName: name)
			if case .current = read {
				return read
			}
			if case .olderForm = read {
				return read
			}
		}
		return state
	}

	/// What the text of a launch argument (`-counter 99`) or environment variable may stand for besides itself, as
	/// `UserDefaults`' typed getters read a string: an integer, a floating-point number, a Boolean (`YES`, `NO`,
	/// `true`, `false`); and the JSON text of the string, for keys stored as JSON text.
	static func argumentReadings(of text: String) -> [Any] {
		var readings: [Any] = []
		if let integer = Int(text) {
			readings.append(integer)
		}
		if let number = Double(text), number.isFinite {
			readings.append(number)
		}
		switch text.lowercased() {
		case "yes", "true": readings.append(true)
		case "no", "false": readings.append(false)
		default: break
		}
		// A `URL`, or a `Codable` value whose JSON is a string (an enum), is stored as JSON text: `https://a.example`
		// stands for `"https://a.example"`.
		if let json = try? JSONEncoder().encode(text) {
			readings.append(String(decoding: json, as: UTF8.self))
		}
		return readings
	}

	/// `change` decoded with this key, once per change for all of its observers.
	@inlinable
	func change(decoding change: StoredChange) -> Defaults.KeyChange<Value> {
		if let beneath = change.beneathOverrides {
			return Defaults.KeyChange(
				oldValue: readValue(change.oldValue, isOverrideText: beneath.isOldOverrideText, beneath: beneath.old),
				newValue: readValue(change.newValue, isOverrideText: beneath.isNewOverrideText, beneath: beneath.new),
				isPrior: change.isPrior)
		}
		return Defaults.KeyChange(
			oldValue: castOrDecodedValue(from: change.oldValue), newValue: castOrDecodedValue(from: change.newValue),
			isPrior: change.isPrior)
	}

	/// The value after `change`, as ``change(decoding:)`` decodes it.
	@inlinable
	func newValue(decoding change: StoredChange) -> Value {
		if let beneath = change.beneathOverrides {
			return readValue(change.newValue, isOverrideText: beneath.isNewOverrideText, beneath: beneath.new)
		}
		return castOrDecodedValue(from: change.newValue)
	}

	/// What a read returns for a key whose store holds `stored`: the text of a launch argument or environment
	/// variable (`isOverrideText`) that does not read as the key's value is skipped, as reads skip it, for the value
	/// `beneath` it.
	@usableFromInline
	func readValue(_ stored: Any?, isOverrideText: Bool, beneath: Any?) -> Value {
		guard isOverrideText, let stored else {
			return decodedValue(from: stored)
		}
		switch decode(stored, isOverrideText: true) {
		case .current(let value), .olderForm(let value, _): return value
		case .absent, .undecodable: return decodedValue(from: beneath, isOverrideText: false)
		}
	}

	/// ``decodedValue(from:)``, with the cast that reads use for scalars stored as they are done in the caller's
	/// specialised code: the generic decoding looks up metadata for every value it decodes.
	@inlinable
	func castOrDecodedValue(from stored: Any?) -> Value {
		if readsByCast, let value = stored as? Value {
			return value
		}
		return decodedValue(from: stored)
	}

	/// The decoded value of `stored`, or the default when it is absent or does not decode.
	@usableFromInline
	func decodedValue(from stored: Any?, isOverrideText: Bool? = nil) -> Value {
		guard let stored else {
			return defaultValue
		}
		switch decode(stored, isOverrideText: isOverrideText) {
		case .current(let value), .olderForm(let value, _): return value
		case .absent, .undecodable: return defaultValue
		}
	}

	/// What this key finds in `store`, with the reason when it does not decode.
	///
	/// ```swift
	/// if case .undecodable(let error) = Defaults.Keys.window.storedState() { print(error) }
	/// ```
	package func storedState(in store: (any Defaults.Store)? = nil) -> Defaults.StoredState<Value> {
		guard let stored = (store ?? suite).storedValue(forKey: name) else {
			return .absent
		}
		return decode(stored, in: store ?? suite)
	}

	/// Writes the stored value again in the key's current form, if it was read from one of its older forms.
	///
	/// Reading an older form never rewrites it by itself. For the package's tests: a program converts stored values
	/// once, in a migration step (`.convert(key)`, which runs this conversion and records that it ran).
	///
	/// - Returns: Whether the value was rewritten.
	@discardableResult
	package func rewriteInCurrentForm(in store: (any Defaults.Store)? = nil) -> Bool {
		let store = store ?? suite
		// The store's own value only: a system-wide default or a launch argument in an older form is not the user's
		// to rewrite, and copying it into the user's file would shadow the administrator's later edits.
		guard let stored = store.ownValue(forKey: name), case .olderForm(let value, _) = decode(stored, in: store)
		else {
			return false
		}
		store[self] = value
		return true
	}
}

// Here, not in Serialization: a stored state is a Keys type, and bridges know nothing of keys.
extension Defaults.AnyBridge {
	/// What `stored` is to a key named `keyName` that reads it with this bridge, else with each of `olderForms` in
	/// order: the first value one of them reads, or an error that says why each refused it. Each bridge decodes
	/// `stored` once, and none after the first that reads it.
	func decode(
		_ stored: Any, orOlderForms olderForms: [Defaults.AnyBridge<Value>], keyName: String
	) -> Defaults.StoredState<Value> {
		let (current, olderElementForm) = reading(storedForm: stored)
		if let value = current.value {
			// A collection bridge that read an element through one of its elements' older forms: the value is not in
			// the current form, so that rewrites and migrations convert it.
			if let olderElementForm {
				return .olderForm(value, bridgeName: olderElementForm)
			}
			return .current(value)
		}
		var alsoTried: [(bridgeName: String, reason: String)] = []
		for older in olderForms {
			let result = older.decode(storedForm: stored)
			if let value = result.value {
				return .olderForm(value, bridgeName: older.name)
			}
			alsoTried.append((older.name, result.failureReason ?? ""))
		}
		return .undecodable(
			Defaults.DecodingError(
				keyName: keyName, storedValue: stored, bridgeName: name, reason: current.failureReason ?? "",
				alsoTried: alsoTried, storedValueDescription: BridgeDiagnosis.describe(stored)))
	}
}
