import Foundation
import Keyring
import TestSupport
import Testing

/// ksecretd answers a write before it saves the value (on a 5 s timer) and keeps the item's
/// attributes at once, so a daemon killed in between leaves the item with an empty secret. Without
/// the library's non-empty marker that read as an empty value: a write reported done, then lost.
@Suite("A value the provider lost (ksecretd)", .serialized, .needs(.savesSecretsLate))
struct LostValueTests {
    /// The daemon killed and started again: what a crash or a logout within 5 s of a write does.
    func crash() throws {
        try keyringCtl("kill")
        try keyringCtl("start")
    }

    @Test(
        "written non-empty, lost in a crash: .valueLost from every read, never an empty value; the next write mends it",
        arguments: [false, true])
    func lostValueIsAnError(accountFirst: Bool) throws {
        try requireTestKeyring()
        let id = uniqueID("lost")
        let store = try SecretStore(identifier: id)
        defer { try? store.reset() }
        // An account first makes the item with an empty value; the value then comes by an update.
        if accountFirst { try store.setObject("alice", forKey: .account) }
        try store.setObject("written just before the crash", forKey: .valueData)
        try crash()
        // Another client sees what the provider kept: the item, with an empty secret.
        let raw = try run(secretTool, ["lookup", "service", id])
        try #require(raw.text.isEmpty, "ksecretd saved the value before the kill; nothing was lost to test: \(raw.text)")
        let path = try #require(try Keyring.default.search(["service": id]).first?.objectPath)
        #expect(keyringError { try store.object(forKey: .valueData) } == .valueLost(path: path))
        #expect(keyringError { try Keyring.default.lookup(["service": id]) } == .valueLost(path: path))
        #expect(keyringError { try Keyring.default.readAll(["service": id]) } == .valueLost(path: path))
        #expect(try store.object(forKey: .account) == (accountFirst ? "alice" : ""), "the item's other keys still read")
        try store.setObject("written again", forKey: .valueData)
        #expect(try store.object(forKey: .valueData) == "written again")
        #expect(try Keyring.default.search(["service": id]).count == 1, "mended in place, no twin")
    }

    @Test("an empty value stored on purpose reads back empty after the same crash")
    func emptyOnPurposeStaysAValue() throws {
        try requireTestKeyring()
        let attributes = ["service": uniqueID("lost-empty"), "username": ""]
        defer { _ = try? Keyring.default.delete(attributes) }
        try Keyring.default.store(Data(), attributes: attributes, label: "empty on purpose")
        try crash()
        #expect(try Keyring.default.lookup(attributes) == Data())
        // And a value emptied on purpose after a non-empty one: the marker goes with it.
        try Keyring.default.store(Data("soon empty".utf8), attributes: attributes, label: "empty on purpose")
        try Keyring.default.store(Data(), attributes: attributes, label: "empty on purpose")
        try crash()
        #expect(try Keyring.default.lookup(attributes) == Data())
        #expect(try Keyring.default.search(attributes).count == 1, "the store found its item through the marker: no twin")
    }
}
