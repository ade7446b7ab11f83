import Defaults
import Foundation

/// Commands for the `UserDefaults` store's reload tests: each writes or reads a fixed set of typed keys in a suite.
let userDefaultsCommands: [String: @Sendable ([String]) -> Int32] = [:]
