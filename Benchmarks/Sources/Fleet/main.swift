import Foundation

// The fleet benchmark: sync engines by the hundred on one 3-member etcd cluster. Run through `Benchmarks/fleet`,
// which builds it and names etcd; results and method in Docs/Performance.md, "Sync at fleet scale". Not part of CI.

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "machines" {
	await runMachines(Array(arguments.dropFirst()))
	exit(0)
}
var options = FleetOptions()
var remaining = arguments[...]
while let option = remaining.popFirst() {
	guard let value = remaining.popFirst() else {
		fatalError("\(option) needs a value")
	}
	switch option {
	case "--machines": options.machines = Int(value)!
	case "--processes": options.processes = Int(value)!
	case "--writes": options.writes = Int(value)!
	case "--cold-keys": options.coldKeys = Int(value)!
	case "--partition": options.partitionSeconds = Double(value)!
	case "--etcd": options.etcd = value
	case "--relay": options.relayScript = value
	default: fatalError("unknown option \(option)")
	}
}
do {
	try runFleet(options)
} catch {
	print("fleet: \(error)")
	exit(1)
}
