import Foundation

// Where the system layer of a settings file lives, for the `defaults` command, which reads and writes those files
// without opening a store on them: the same folders and names the file store reads (`FileStore+Layers.swift`).
extension Defaults.FileStore {
	/// The folders of system-wide defaults and locks, in order of precedence: those of `$XDG_CONFIG_DIRS` (absolute
	/// paths only), else `/etc/xdg`.
	package static var systemFolders: [URL] {
		systemConfigurationDirectories()
	}

	/// The name of the locks file of the settings file named `fileName`: `app.plist` → `app.locks.plist`.
	package static func locksFileName(ofFileNamed fileName: String) -> String {
		lockFileName(forFileNamed: fileName)
	}
}
