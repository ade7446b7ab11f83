// Opens a property-list file and reads one key, then exits: a process's first read, timed from outside by the
// `First read` benchmarks of the `Bulk` target.
//
//     FirstRead filestore <file> <key> <expected Int>
//     FirstRead userdefaults <suite name> <key> <expected Int>   (the file is $XDG_CONFIG_HOME/<suite name>.plist)
//     FirstRead none                                            (the cost of the process alone)
//
// Exits with 0 when the value read is the expected one, 1 when it is not, 2 on bad arguments.
import Defaults
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
	exit(2)
}

switch arguments[1] {
case "none":
	exit(0)
case "filestore" where arguments.count == 5:
	let store = Defaults.FileStore.at(URL(filePath: arguments[2]))
	let key = Defaults.Key<Int>(arguments[3], default: -1, suite: store)
	exit(Defaults[key] == Int(arguments[4]) ? 0 : 1)
case "userdefaults" where arguments.count == 5:
	let defaults = UserDefaults(suiteName: arguments[2])!
	exit(defaults.integer(forKey: arguments[3]) == Int(arguments[4]) ? 0 : 1)
default:
	exit(2)
}
