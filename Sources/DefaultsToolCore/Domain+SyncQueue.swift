import Defaults
import Foundation

// A domain that a sync engine keeps in step with a remote has a sync queue beside its file. The verbs that change
// keys record them there first, so that the engine pushes what the command removed (many keys at once too) instead
// of taking them for a lost settings file and putting them back.
extension Domain {
	/// Records `keys` as changed on purpose in the domain's sync queue, if it has one. A queue that cannot be read or
	/// written is left as it is, and a warning says so: the change itself goes ahead.
	func recordSyncedChanges(of keys: some Sequence<String>) {
		if let problem = Defaults.SyncEngine.recordIntendedChanges(of: keys, inSettingsFile: url) {
			Output.error(
				"warning: \(problem) A sync engine may take keys this command removes for a lost file and put them back."
			)
		}
	}
}
