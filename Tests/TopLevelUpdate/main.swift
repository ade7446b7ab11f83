import Defaults
import DefaultsEtcd
import Foundation

// A program as a new user writes it: the synced update called from top-level code, as it reads.
// `main <endpoint> <prefix> <name>` adds 1 to the synced key <name> and prints `updated <value>`.
//
// No target builds this file: Swift compiles its `try await Defaults.update` to the synchronous form, with the warning
// "no 'async' operations occur within 'await' expression", which the package's warnings-as-errors build would refuse.
// SyncedOverloadTests compiles it against the built modules, checks that warning, and runs it against etcd.

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
	print("usage: main <endpoint> <prefix> <name>")
	exit(64)
}
let seats = Defaults.Key<Int>(arguments[3], default: 0)
Defaults.iCloud.add(seats)
Defaults.iCloud.configure(remote: try EtcdClient(endpoints: [arguments[1]]), prefix: arguments[2])

let value = try await Defaults.update(seats) { $0 += 1 }
print("updated \(value)")
