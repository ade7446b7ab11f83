import Foundation

// A child process for the tests: `DefaultsTestHelper <command> [arguments…]`.
// Each area of the package adds its commands in a file of its own; the exit status is the command's result.

let arguments = Array(CommandLine.arguments.dropFirst())
guard let name = arguments.first else {
	FileHandle.standardError.write(Data("usage: DefaultsTestHelper <command> [arguments…]\n".utf8))
	exit(64)
}

let commands = userDefaultsCommands.merging(fileStoreCommands) { first, _ in first }
	.merging(observationCommands) { first, _ in first }
	.merging(syncCommands) { first, _ in first }
	.merging(signalCommands) { first, _ in first }
	.merging(syncMachineCommands) { first, _ in first }
	.merging(updateCommands) { first, _ in first }
	.merging(syncIncrementCommands) { first, _ in first }
	.merging(syncSharedFileCommands) { first, _ in first }
	.merging(layerCommands) { first, _ in first }
	.merging(isolationCommands) { first, _ in first }
	.merging(traitCommands) { first, _ in first }
guard let command = commands[name] else {
	FileHandle.standardError.write(Data("unknown command \(name); known: \(commands.keys.sorted())\n".utf8))
	exit(64)
}
exit(command(Array(arguments.dropFirst())))
