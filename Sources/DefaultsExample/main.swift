import Defaults
import Foundation

// A real program on the package: it prints what its previous run stored, changes it, and stores it again.
// Run it twice: `swift run defaults-example`.

enum Theme: String, Defaults.Serializable {
	case light, dark
}

struct Window: Codable, Defaults.Serializable {
	var width: Int
	var height: Int
}

extension Defaults.Keys {
	static let launchCount = Key<Int>("launchCount", default: 0)
	static let lastLaunch = Key<Date?>("lastLaunch")
	static let theme = Key<Theme>("theme", default: .light)
	static let window = Key<Window>("window", default: Window(width: 800, height: 600))
	static let recentFiles = Key<[URL]>("recentFiles", default: [])
}

let previousLaunch = Defaults[.lastLaunch].map { "last run \($0.formatted(date: .abbreviated, time: .standard))" }
print("Stored by the previous run (\(previousLaunch ?? "no previous run")):")
print("  launchCount = \(Defaults[.launchCount])")
print("  theme       = \(Defaults[.theme])")
print("  window      = \(Defaults[.window].width)×\(Defaults[.window].height)")
print("  recentFiles = \(Defaults[.recentFiles].map(\.lastPathComponent))")

Defaults[.launchCount] += 1
Defaults[.lastLaunch] = Date()
Defaults[.theme] = Defaults[.theme] == .light ? .dark : .light
Defaults[.window].width += 10
Defaults[.recentFiles] = Array(
	([URL(fileURLWithPath: "/tmp/notes-\(Defaults[.launchCount]).txt")] + Defaults[.recentFiles]).prefix(3))

print("Stored for the next run: launchCount = \(Defaults[.launchCount]), theme = \(Defaults[.theme])")
// No flush call: the package writes to disk by itself, at the latest when the program exits.
