import Defaults
import Foundation

/// Commands for the file store's child-process tests.
let fileStoreCommands: [String: @Sendable ([String]) -> Int32] = [:]
