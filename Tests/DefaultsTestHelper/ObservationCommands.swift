import Defaults
import Foundation

/// Commands for the observation tests.
let observationCommands: [String: @Sendable ([String]) -> Int32] = [:]
