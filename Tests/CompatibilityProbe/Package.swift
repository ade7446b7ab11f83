// swift-tools-version: 6.2
// Code written for the well-known Defaults package (sindresorhus/Defaults 9.x), compiled as another package would
// compile it: the package's own tests see its `package` declarations, so only a package of its own notices a
// well-known name that stopped being public. `.ci/api` builds it; nothing here is fetched (a path dependency only).
import PackageDescription

let package = Package(
	name: "CompatibilityProbe",
	platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
	dependencies: [.package(name: "Defaults", path: "../..")],
	targets: [
		.target(name: "CompatibilityProbe", dependencies: [.product(name: "Defaults", package: "Defaults")])
	],
	swiftLanguageModes: [.v6]
)
