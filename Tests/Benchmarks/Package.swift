// swift-tools-version:6.0
// The benchmark programs scripts/bench runs. An outside package, like Tests/Consumer: it uses
// the libraries through a path dependency on the repository root. SwiftPM names a path
// dependency after its directory, which differs between clones, so the package is named from
// that directory at load time.
import Foundation
import PackageDescription

let root = URL(fileURLWithPath: Context.packageDirectory).appendingPathComponent("../..").standardizedFileURL
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "Benchmarks",
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(
            name: "keyring-bench",
            dependencies: [
                .product(name: "Keyring", package: rootIdentity),
                .product(name: "DeviceIdentity", package: rootIdentity),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
