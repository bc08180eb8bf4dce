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
        .target(name: "DeviceIdentity", dependencies: ["Keyring", "CLibSecret"]),
        .executableTarget(name: "idtool", dependencies: ["Keyring", "DeviceIdentity"]),
        .testTarget(name: "KeyringTests", dependencies: ["Keyring", "CLibSecret"]),
        .testTarget(name: "DeviceIdentityTests", dependencies: ["DeviceIdentity", "Keyring"]),
        .testTarget(name: "idtoolTests", dependencies: ["idtool", "DeviceIdentity", "Keyring"]),
        // Fault injection against real daemons: its own target so it can be run (and timed) alone.
        .testTarget(
            name: "FaultTests", dependencies: ["idtool", "DeviceIdentity", "Keyring"], exclude: ["fault-table.md"]),
    ],
    swiftLanguageModes: [.v6]
)
