// swift-tools-version:6.0
// An outside package that uses Keyring and DeviceIdentity the way an app would: through a path
// dependency on the repository root. SwiftPM names a path dependency after its directory, which is
// "main" here but differs in other clones, so the product's package is named from that directory
// at load time.
import Foundation
import PackageDescription

let root = URL(fileURLWithPath: Context.packageDirectory).appendingPathComponent("../..").standardizedFileURL
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "Consumer",
    dependencies: [.package(path: "../..")],
    targets: [
        .executableTarget(
            name: "consumer",
            dependencies: [
                .product(name: "Keyring", package: rootIdentity),
                .product(name: "DeviceIdentity", package: rootIdentity),
            ]
        ),
        // The README's and the other articles' Swift blocks, in a namespace of their own (the
        // README's `store` and `resolver` would clash with the getting-started articles').
        // KeyringTesting for the testing article's memory-keyring block.
        .executableTarget(
            name: "examples",
            dependencies: [
                .product(name: "Keyring", package: rootIdentity),
                .product(name: "DeviceIdentity", package: rootIdentity),
                .product(name: "KeyringTesting", package: rootIdentity),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
