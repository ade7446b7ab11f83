import Foundation

// Where the system layer of a settings file lives, for the `defaults` command, which reads and writes those files
// without opening a store on them: the same folders and names the file store reads (`FileStore+Layers.swift`).
extension Defaults.FileStore {
	/// The folders of system-wide defaults and locks, in order of precedence: those of `$XDG_CONFIG_DIRS` (absolute
	/// paths only), else `/etc/xdg`.
	package static var systemFolders: [URL] {
		systemConfigurationDirectories()
	}

	/// The system folders the settings file at `url` reads, none for a file outside the configuration folder, and the
	/// name of its files there: the rule the file store follows (`FileStoreRegistry.layers(of:)`), so that the command
	/// reads and writes the files the app reads.
	package static func systemLayer(ofFileAt url: URL) -> (folders: [URL], fileName: String) {
		let layers = FileStoreRegistry.layers(of: SettingsFile(url: url))
		return (layers.folders, layers.name)
	}

	/// The name of the locks file of the settings file named `fileName`: `app.plist` → `app.locks.plist`.
	package static func locksFileName(ofFileNamed fileName: String) -> String {
		lockFileName(forFileNamed: fileName)
	}
}
