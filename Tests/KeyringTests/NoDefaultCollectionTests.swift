import Foundation
import Keyring
import Testing
import TestSupport

/// gnome-keyring 42 does not let SetAlias(default, "/") alone remove the alias: it empties
/// $XDG_DATA_HOME/keyrings/default and then falls back to "login" on the next ReadAlias. The
/// alias only disappears when that file names a collection that does not exist.
@Suite(
    "No default collection",
    .needs(.removableDefaultAlias))
struct NoDefaultCollectionTests {
    static let service = "/org/freedesktop/secrets"

    static func dbus(_ arguments: [String]) throws -> Output {
        try mustRun("/usr/bin/dbus-send", ["--session", "--print-reply", "--dest=org.freedesktop.secrets", service] + arguments)
    }

    static func readDefaultAlias() throws -> String {
        let reply = try dbus(["org.freedesktop.Secret.Service.ReadAlias", "string:default"])
        let line = reply.text.split(separator: "\n").last { $0.contains("object path") } ?? ""
        return line.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
    }

    // Removing the default alias goes through gnome-keyring's keyrings/default file. KWallet
    // always has its wallet behind the alias, and making a new one opens a dialog.
    @Test(
        "without a default collection, setObject throws noDefaultCollection and status says so",
        .needs(.removableDefaultAlias))
    func noDefaultCollection() throws {
        try requireTestKeyring()
        let original = try Self.readDefaultAlias()
        try #require(original.hasPrefix("/org/freedesktop/secrets/collection/"), "default alias is \(original)")
        let dataHome = try #require(ProcessInfo.processInfo.environment["XDG_DATA_HOME"])
        let defaultFile = URL(fileURLWithPath: dataHome).appendingPathComponent("keyrings/default")

        _ = try Self.dbus(["org.freedesktop.Secret.Service.SetAlias", "string:default", "objpath:/"])
        defer {
            do {
                _ = try Self.dbus(["org.freedesktop.Secret.Service.SetAlias", "string:default", "objpath:\(original)"])
                #expect(try Self.readDefaultAlias() == original)
            } catch {
                Issue.record("could not restore the default alias: \(error)")
            }
        }
        try Data("no-such-collection-\(UUID().uuidString)".utf8).write(to: defaultFile)
        try #require(try Self.readDefaultAlias() == "/", "the daemon still reports a default collection")

        let store = try SecretStore(identifier: uniqueID("nodefault"))
        #expect(keyringError { try store.setObject("v", forKey: .valueData) } == .noDefaultCollection)
        #expect(keyringError { try Keyring.default.store(Data("v".utf8), attributes: ["service": store.identifier], label: "l") } == .noDefaultCollection)
        // A read of an absent item is still a plain miss.
        #expect(try store.object(forKey: .valueData) == nil)
        // Lock state needs a default collection too (Keyring+LockState.swift).
        #expect(keyringError { try Keyring.default.isLocked() } == .noDefaultCollection)
        #expect(keyringError { try store.isLocked() } == .noDefaultCollection)
        #expect(keyringError { try Keyring.default.lockCollection() } == .noDefaultCollection)
        #expect(keyringError { try Keyring.default.unlockCollection() } == .noDefaultCollection)

        let status = Keyring.default.status()
        #expect(status.isReachable)
        #expect(!status.hasDefaultCollection)
        #expect(!status.isLocked)
        #expect(status.problem == .noDefaultCollection)
        #expect(status.defaultCollectionLabel == nil)
    }
}
