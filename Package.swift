// swift-tools-version:6.0
// Licensed under the Apache License, Version 2.0 (see LICENSE).
import PackageDescription

let package = Package(
    name: "KeyringIdentity",
    products: [
        .library(name: "Keyring", targets: ["Keyring"]),
        .library(name: "DeviceIdentity", targets: ["DeviceIdentity"]),
        // For an app's unit tests only: `Keyring(memory: MemoryKeyring())`, an in-memory keyring
        // with a lock, unlock answers and injected faults. Link it from test targets, never the app.
        .library(name: "KeyringTesting", targets: ["KeyringTesting"]),
        .executable(name: "idtool", targets: ["idtool-executable"]),
        // For an app's tests and CI: `swift run keyring-sandbox -- swift test` runs them with a
        // throwaway, unlocked keyring in a private D-Bus session. Foundation and Glibc only.
        .executable(name: "keyring-sandbox", targets: ["keyring-sandbox"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLibSecret",
            path: "Modules/CLibSecret",
            pkgConfig: "libsecret-1",
            providers: [.apt(["libsecret-1-dev"])]
        ),
        // The C helpers over libsecret and GLib that Swift cannot write itself (casts, macros,
        // variadic GVariant calls, libsecret's private file backend), with nullability.
        .target(name: "KeyringShim", dependencies: ["CLibSecret"], path: "Modules/KeyringShim"),
        .target(name: "Keyring", dependencies: ["CLibSecret", "KeyringShim"]),
        .target(name: "DeviceIdentity", dependencies: ["Keyring"]),
        .target(name: "KeyringTesting", dependencies: ["Keyring"]),
        // idtool's code, a library module so that the test targets can import it without linking
        // the executable's flags below.
        .target(name: "idtool", dependencies: ["Keyring", "DeviceIdentity"], exclude: ["Executable"]),
        // A release idtool links the Swift runtime statically, as `--static-swift-stdlib` does:
        // the dynamic loader then loads and binds no Swift library, which halves the instructions
        // of `idtool --version` (14.0 M -> 7.3 M, callgrind). The compile flag makes
        // `import FoundationEssentials` in main.swift autolink the static library's own
        // dependencies. Not in debug builds: under --sanitize the sanitizer's interceptors stay
        // local to a statically linked binary, so GLib's allocations reach its free() (TSan
        // aborts in `idtool doctor`). Unsafe flags are fine here: SwiftPM rejects them only in the
        // targets of the products a dependent package uses, and no library product holds this one.
        .executableTarget(
            name: "idtool-executable", dependencies: ["idtool"], path: "Sources/idtool/Executable",
            swiftSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))],
            linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(platforms: [.linux], configuration: .release))]),
        .executableTarget(name: "keyring-sandbox"),
        // The subprocess runner the test targets share; not part of any product.
        .target(name: "TestSupport", dependencies: ["Keyring"], path: "Tests/TestSupport"),
        .testTarget(name: "KeyringTests", dependencies: ["Keyring", "CLibSecret", "KeyringShim", "TestSupport"]),
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
        // The keyring contract: the same tests against KeyringTesting's in-memory keyring and the
        // real provider of the harness they run in.
        .testTarget(name: "KeyringContractTests", dependencies: ["Keyring", "KeyringTesting", "DeviceIdentity", "TestSupport"]),
        // The identifier rule over every order of events, in process: the memory keyring and
        // real state directories, no daemon.
        .testTarget(name: "EventOrderTests", dependencies: ["DeviceIdentity", "Keyring", "KeyringTesting", "TestSupport"]),
        // keyring-sandbox, run as a built binary against the real gnome-keyring it starts.
        .testTarget(name: "KeyringSandboxTests", dependencies: ["TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
