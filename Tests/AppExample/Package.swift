// swift-tools-version:6.0
// An outside package that tests an app's keyring handling the way an app would: unit tests on
// KeyringTesting's in-memory keyring (locked, dismissed, unreachable, timed out), and an
// integration test run with `swift run keyring-sandbox -- swift test` against a throwaway real
// keyring. It depends on the repository root by path, as Tests/Consumer does; SwiftPM names a
// path dependency after its directory, so the products' package is named from that directory.
import Foundation
import PackageDescription

let root = URL(fileURLWithPath: Context.packageDirectory).appendingPathComponent("../..").standardizedFileURL
let rootIdentity = root.lastPathComponent.lowercased()

let package = Package(
    name: "AppExample",
    dependencies: [.package(path: "../..")],
    targets: [
        // The "app": it keeps a login token with SecretStore and a device id with IdentifierResolver.
        .target(
            name: "TokenApp",
            dependencies: [
                .product(name: "Keyring", package: rootIdentity),
                .product(name: "DeviceIdentity", package: rootIdentity),
            ]
        ),
        // Only the tests link KeyringTesting.
        .testTarget(
            name: "TokenAppTests",
            dependencies: [
                "TokenApp",
                .product(name: "Keyring", package: rootIdentity),
                .product(name: "KeyringTesting", package: rootIdentity),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
