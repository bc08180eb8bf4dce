import Foundation
import Keyring
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("No session bus in this process", .needs(.secretService))
struct NoSessionBusTests {
    @Test("without DBUS_SESSION_BUS_ADDRESS and $XDG_RUNTIME_DIR/bus every call throws noSessionBus")
    func noSessionBus() async throws {
        try requireTestKeyring()
        let store = try SecretStore(identifier: uniqueID("nobus"))
        try await store.setObject("v", forKey: .valueData)   // the process already has a live connection

        let savedAddress = getenv("DBUS_SESSION_BUS_ADDRESS").map { String(cString: $0) }
        let savedRuntime = getenv("XDG_RUNTIME_DIR").map { String(cString: $0) }
        let emptyDir = FileManager.default.temporaryDirectory.appendingPathComponent("nobus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: emptyDir, withIntermediateDirectories: true)
        unsetenv("DBUS_SESSION_BUS_ADDRESS")
        setenv("XDG_RUNTIME_DIR", emptyDir.path, 1)
        defer {
            if let savedAddress { setenv("DBUS_SESSION_BUS_ADDRESS", savedAddress, 1) }
            if let savedRuntime { setenv("XDG_RUNTIME_DIR", savedRuntime, 1) } else { unsetenv("XDG_RUNTIME_DIR") }
            try? FileManager.default.removeItem(at: emptyDir)
        }

        #expect(keyringError { try store.object(forKey: .valueData) }?.isNoSessionBus == true)
        #expect(keyringError { try store.setObject("w", forKey: .valueData) }?.isNoSessionBus == true)
        #expect(keyringError { try store.reset() }?.isNoSessionBus == true)
        #expect(keyringError { try Keyring.default.search(["service": store.identifier]) }?.isNoSessionBus == true)
        #expect(await keyringError { try await store.object(forKey: .valueData) }?.isNoSessionBus == true)
        let status = blockingStatus()
        #expect(!status.isReachable)
        #expect(await Keyring.default.status().problem?.isNoSessionBus == true)
        #expect(status.problem?.isNoSessionBus == true)

        if let savedAddress { setenv("DBUS_SESSION_BUS_ADDRESS", savedAddress, 1) }
        if let savedRuntime { setenv("XDG_RUNTIME_DIR", savedRuntime, 1) }
        #expect(try await store.object(forKey: .valueData) == "v")
        try await store.reset()
    }
}
