// swift-tools-version: 6.2
import PackageDescription

let package = Package(
	name: "Defaults",
	platforms: [
		// The first releases with the `Synchronization` module, whose `Atomic` counts every store's changes. (The locks
		// are `LockedState`, a pthread mutex: Sources/Defaults/Support/LockedState.swift says why not `Mutex`.)
		.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2),
	],
	products: [
		.library(name: "Defaults", targets: ["Defaults"]),
		// Checks any `Defaults.Store` against the store seam's contract, from any test framework.
		.library(name: "DefaultsStoreConformance", targets: ["DefaultsStoreConformance"]),
		// Syncs settings through etcd; a library of its own so that apps that do not sync do not link networking.
		.library(name: "DefaultsEtcd", targets: ["DefaultsEtcd"]),
		// An app's tests and previews: each test gets in-memory stores of its own (a Swift Testing trait, and a
		// closure for XCTest). Depends on the toolchain's Testing module only.
		.library(name: "DefaultsTesting", targets: ["DefaultsTesting"]),
		.executable(name: "defaults-example", targets: ["DefaultsExample"]),
		// The `defaults` command: read, write and watch settings files from the shell.
		.executable(name: "defaults", targets: ["DefaultsTool"]),
	],
	targets: [
		.target(name: "Defaults"),
		.target(name: "DefaultsStoreConformance", dependencies: ["Defaults"]),
		.target(name: "DefaultsEtcd", dependencies: ["Defaults"]),
		.target(name: "DefaultsTesting", dependencies: ["Defaults"]),
		.executableTarget(name: "DefaultsExample", dependencies: ["Defaults"]),
		// The `defaults` command's logic, parser and verbs, in a library so that the tests reach them directly.
		.target(name: "DefaultsToolCore", dependencies: ["Defaults"]),
		.executableTarget(name: "DefaultsTool", dependencies: ["DefaultsToolCore"]),
		// Sample types and values shared by the tests and their child processes.
		.target(name: "DefaultsTestSupport", dependencies: ["Defaults"], path: "Tests/DefaultsTestSupport"),
		// Makes the test process's HOME, XDG_CONFIG_HOME and TMPDIR a folder of its own before any test runs (C: the
		// only way to run first), so that no test writes to the real home or leaves anything in the temporary folder.
		.target(name: "DefaultsTestIsolation", path: "Tests/DefaultsTestIsolation"),
		// Spawned by the tests to check what survives a process exit.
		.executableTarget(
			name: "DefaultsTestHelper",
			dependencies: ["Defaults", "DefaultsEtcd", "DefaultsTesting", "DefaultsTestSupport"],
			path: "Tests/DefaultsTestHelper"),
		// The tests run `DefaultsTestHelper` and `defaults` as child processes; depending on them builds them first.
		.testTarget(
			name: "DefaultsTests",
			dependencies: [
				"Defaults", "DefaultsEtcd", "DefaultsStoreConformance", "DefaultsTestIsolation", "DefaultsTestSupport",
				"DefaultsTestHelper", "DefaultsTool", "DefaultsToolCore",
			]),
		// The testing library's own tests. SwiftPM links every test target into one test process, so they share the
		// package tests' isolated home folder.
		.testTarget(
			name: "DefaultsTestingTests",
			dependencies: ["Defaults", "DefaultsTesting", "DefaultsTestIsolation"]),
	],
	swiftLanguageModes: [.v6]
)
