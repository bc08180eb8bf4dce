// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "KeyringIdentity",
    products: [
        .library(name: "Keyring", targets: ["Keyring"]),
        .library(name: "DeviceIdentity", targets: ["DeviceIdentity"]),
        .executable(name: "idtool", targets: ["idtool"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibSecret",
            path: "Modules/CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        .target(name: "Keyring", dependencies: ["CLibSecret"]),
        .target(name: "DeviceIdentity", dependencies: ["Keyring"]),
        .executableTarget(name: "idtool", dependencies: ["Keyring", "DeviceIdentity"]),
        // The subprocess runner the test targets share; not part of any product.
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "KeyringTests", dependencies: ["Keyring", "CLibSecret", "TestSupport"]),
        .testTarget(name: "DeviceIdentityTests", dependencies: ["DeviceIdentity", "Keyring", "TestSupport"]),
        .testTarget(name: "idtoolTests", dependencies: ["idtool", "DeviceIdentity", "Keyring", "TestSupport"]),
        // libsecret's file backend (sandboxed apps): no bus, no daemon; a keyring file in a temp directory.
        .testTarget(
            name: "FileBackendTests", dependencies: ["Keyring", "DeviceIdentity", "TestSupport"],
            exclude: ["portal-standin.py"]),
        // Fault injection against real daemons: its own target so it can be run (and timed) alone.
        .testTarget(
            name: "FaultTests", dependencies: ["idtool", "DeviceIdentity", "Keyring", "TestSupport"],
            exclude: ["fault-table.md"]),
    ],
    swiftLanguageModes: [.v6]
)
